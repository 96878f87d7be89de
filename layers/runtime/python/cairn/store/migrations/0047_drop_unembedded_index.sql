-- Messages without a vector are found through messages_to_embed (0003): per agent, and only
-- those with words to embed (store/messages.py, TO_EMBED and AGENTS_TO_EMBED). This older
-- index served no statement, yet every message written entered it, and one with no search
-- text (a tool's return, a heartbeat) never left it: an insert into one more index per
-- message, for nothing.
DROP INDEX IF EXISTS messages_unembedded;
