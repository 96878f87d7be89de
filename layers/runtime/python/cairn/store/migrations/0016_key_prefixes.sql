-- Keys' prefixes were their first 12 characters: the whole key when it was that short.
-- Now at most Cairn's marker and 4 random characters, and of a key chosen by hand at most
-- a quarter of it (`domain.tenancy.visible_prefix`). A stored prefix shorter than 12 was the
-- whole key, so its length is the key's.
UPDATE api_keys
SET key_prefix = CASE
    WHEN key_prefix LIKE 'sk-cairn-%' AND length(key_prefix) = 12 THEN key_prefix
    ELSE left(key_prefix, least(4, length(key_prefix) / 4))
END;
