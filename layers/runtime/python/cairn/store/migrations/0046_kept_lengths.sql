-- BM25's average length, kept as its N is (0045): the sum of the searchable texts' lengths
-- (their distinct words, `length(fts)`), an agent's on its row and an archive's in
-- archive_stats, by the writes that change it. The words' statement took the average of
-- the texts its query matched, which meant gathering them (DISTINCT over every posting:
-- 1.8 ms of 13 at 10,000 messages, growing with the history); the scope's own average is
-- BM25's, and costs a read of one row.
ALTER TABLE agents ADD COLUMN searchable_length bigint NOT NULL DEFAULT 0;
UPDATE agents a SET searchable_length = s.total
FROM (SELECT agent_id, sum(length(fts)) AS total FROM messages
      WHERE agent_id IS NOT NULL AND search_text <> '' AND rewound_at IS NULL
      GROUP BY agent_id) s
WHERE a.id = s.agent_id;

ALTER TABLE archive_stats ADD COLUMN passage_length bigint NOT NULL DEFAULT 0;
UPDATE archive_stats st SET passage_length = s.total
FROM (SELECT archive_id, sum(length(fts)) AS total FROM passages GROUP BY archive_id) s
WHERE st.archive_id = s.archive_id;

-- Inserts and deletions: still the one statement (rows, searchable rows, their length).
CREATE OR REPLACE FUNCTION messages_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    missing bigint;
BEGIN
    WITH n AS (
        SELECT agent_id, count(*) AS rows,
               count(*) FILTER (WHERE search_text <> '' AND rewound_at IS NULL) AS searchable,
               coalesce(sum(length(fts)) FILTER (WHERE search_text <> '' AND rewound_at IS NULL),
                        0) AS total
        FROM changed WHERE agent_id IS NOT NULL
        GROUP BY agent_id
    ), counted AS (
        UPDATE agents a SET message_count = greatest(a.message_count + sign * n.rows, 0),
                            searchable_messages = greatest(
                                a.searchable_messages + sign * n.searchable, 0),
                            searchable_length = greatest(
                                a.searchable_length + sign * n.total, 0)
        FROM n WHERE a.id = n.agent_id
        RETURNING a.id
    )
    SELECT (SELECT count(*) FROM n) - (SELECT count(*) FROM counted) INTO missing;
    IF TG_OP = 'INSERT' AND missing > 0 THEN
        RAISE foreign_key_violation USING
            MESSAGE = 'insert into messages: its agent does not exist',
            TABLE = 'messages', COLUMN = 'agent_id';
    END IF;
    RETURN NULL;
END
$$;

-- A message that becomes searchable or stops being so, or whose indexed text changes while
-- it is (its words, or the speaker's name and the date indexed with them, 0038): its share
-- of the count and of the length, taken out as it was and put back as it is.
CREATE OR REPLACE FUNCTION messages_searchability() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was boolean := OLD.search_text <> '' AND OLD.rewound_at IS NULL;
    is_now boolean := NEW.search_text <> '' AND NEW.rewound_at IS NULL;
BEGIN
    UPDATE agents SET
        searchable_messages = greatest(
            searchable_messages + (CASE WHEN is_now THEN 1 ELSE 0 END)
            - (CASE WHEN was THEN 1 ELSE 0 END), 0),
        searchable_length = greatest(
            searchable_length + (CASE WHEN is_now THEN length(NEW.fts) ELSE 0 END)
            - (CASE WHEN was THEN length(OLD.fts) ELSE 0 END), 0)
    WHERE id = NEW.agent_id;
    RETURN NULL;
END
$$;
DROP TRIGGER messages_searchability ON messages;
-- -1 for a text not searchable: a searchable one of no words (0) differs from it.
CREATE TRIGGER messages_searchability
    AFTER UPDATE OF search_text, rewound_at, name, role, created_at ON messages
    FOR EACH ROW
    WHEN ((CASE WHEN OLD.search_text <> '' AND OLD.rewound_at IS NULL
                THEN length(OLD.fts) ELSE -1 END)
          IS DISTINCT FROM (CASE WHEN NEW.search_text <> '' AND NEW.rewound_at IS NULL
                                 THEN length(NEW.fts) ELSE -1 END))
    EXECUTE FUNCTION messages_searchability();

CREATE OR REPLACE FUNCTION passages_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    -- The archive's row first: it serialises writers of one archive, and every statement
    -- below takes a snapshot after the other writer committed (READ COMMITTED).
    INSERT INTO archive_stats AS s (archive_id, passages, passage_length)
    SELECT archive_id, sign * count(*), sign * coalesce(sum(length(fts)), 0) FROM changed
    WHERE archive_id IN (SELECT id FROM archives)
    GROUP BY archive_id
    ON CONFLICT (archive_id) DO UPDATE SET
        passages = greatest(s.passages + excluded.passages, 0),
        passage_length = greatest(s.passage_length + excluded.passage_length, 0);

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

-- A passage whose text changes in place (an edit): its length, taken out and put back.
CREATE FUNCTION passages_length() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE archive_stats SET passage_length = greatest(
        passage_length + length(NEW.fts) - length(OLD.fts), 0)
    WHERE archive_id = NEW.archive_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER passages_length AFTER UPDATE OF text, created_at ON passages
    FOR EACH ROW WHEN (length(OLD.fts) IS DISTINCT FROM length(NEW.fts))
    EXECUTE FUNCTION passages_length();
