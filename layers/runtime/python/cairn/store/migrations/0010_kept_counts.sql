-- Constant-cost steps: the sizes a step shows in <memory_metadata> (the agent's messages,
-- its archive's passages and tags) are kept by the writes that change them, inside their
-- own transaction, instead of being counted over the whole history on every step. An
-- agent's history and archive only grow; its step must not.
--
-- Statement-level triggers with transition tables: one update per statement and agent or
-- archive, however many rows it wrote (a bulk import does not rewrite the agent's row once
-- per message).

ALTER TABLE agents ADD COLUMN message_count bigint NOT NULL DEFAULT 0;

CREATE TABLE archive_stats (
    archive_id  text PRIMARY KEY REFERENCES archives (id) ON DELETE CASCADE,
    passages    bigint NOT NULL DEFAULT 0,
    tags        text[] NOT NULL DEFAULT '{}'  -- distinct, sorted: as <memory_metadata> lists them
);

-- Passages per tag, so that removing the last passage of a tag removes the tag.
CREATE TABLE archive_tags (
    archive_id  text NOT NULL REFERENCES archives (id) ON DELETE CASCADE,
    tag         text NOT NULL,
    passages    bigint NOT NULL,
    PRIMARY KEY (archive_id, tag)
);

CREATE FUNCTION messages_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    UPDATE agents a SET message_count = greatest(a.message_count + sign * n.rows, 0)
    FROM (SELECT agent_id, count(*) AS rows FROM changed GROUP BY agent_id) n
    WHERE a.id = n.agent_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_counted_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION messages_counted();
CREATE TRIGGER messages_counted_delete AFTER DELETE ON messages
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION messages_counted();

CREATE FUNCTION passages_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    -- The archive's row first: it serialises writers of one archive, and every statement
    -- below takes a snapshot after the other writer committed (READ COMMITTED).
    INSERT INTO archive_stats AS s (archive_id, passages)
    SELECT archive_id, sign * count(*) FROM changed
    WHERE archive_id IN (SELECT id FROM archives)
    GROUP BY archive_id
    ON CONFLICT (archive_id) DO UPDATE SET passages = greatest(s.passages + excluded.passages, 0);

    INSERT INTO archive_tags AS t (archive_id, tag, passages)
    SELECT archive_id, tag, sign * count(*) FROM changed, unnest(changed.tags) AS tag
    WHERE archive_id IN (SELECT id FROM archives)
    GROUP BY archive_id, tag
    ON CONFLICT (archive_id, tag) DO UPDATE SET passages = t.passages + excluded.passages;
    DELETE FROM archive_tags WHERE passages <= 0
      AND archive_id IN (SELECT DISTINCT archive_id FROM changed);

    -- The tag list only changes when a tag appears or goes: rebuilt then, from the index.
    UPDATE archive_stats s SET tags = fresh.tags
    FROM (SELECT c.archive_id,
                 coalesce((SELECT array_agg(t.tag ORDER BY t.tag) FROM archive_tags t
                           WHERE t.archive_id = c.archive_id), '{}') AS tags
          FROM (SELECT DISTINCT archive_id FROM changed WHERE tags <> '{}') c) fresh
    WHERE s.archive_id = fresh.archive_id AND s.tags IS DISTINCT FROM fresh.tags;
    RETURN NULL;
END
$$;
CREATE TRIGGER passages_counted_insert AFTER INSERT ON passages
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION passages_counted();
CREATE TRIGGER passages_counted_delete AFTER DELETE ON passages
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION passages_counted();

-- What exists already.
UPDATE agents a SET message_count = c.rows
FROM (SELECT agent_id, count(*) AS rows FROM messages GROUP BY agent_id) c
WHERE a.id = c.agent_id;
INSERT INTO archive_tags (archive_id, tag, passages)
SELECT archive_id, tag, count(*) FROM passages, unnest(passages.tags) AS tag
GROUP BY archive_id, tag;
INSERT INTO archive_stats (archive_id, passages, tags)
SELECT a.id,
       (SELECT count(*) FROM passages p WHERE p.archive_id = a.id),
       coalesce((SELECT array_agg(t.tag ORDER BY t.tag) FROM archive_tags t
                 WHERE t.archive_id = a.id), '{}')
FROM archives a;
