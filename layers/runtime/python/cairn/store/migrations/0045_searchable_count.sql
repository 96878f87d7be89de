-- BM25's N, an agent's searchable messages, is kept by the writes that change it, as the
-- agent's message_count is (0010), not counted by every search: at 10,000 messages the
-- count was 4-13 ms of the words' statement, the one part of it that grew with the whole
-- history instead of with the query's words (docs/memory.md, "What it costs"). An
-- archive's passages are kept already (archive_stats.passages).
--
-- Searchable: a search text, not rewound (store/search.py's MESSAGE_SCOPE).
ALTER TABLE agents ADD COLUMN searchable_messages bigint NOT NULL DEFAULT 0;
UPDATE agents a SET searchable_messages = s.n
FROM (SELECT agent_id, count(*) AS n FROM messages
      WHERE agent_id IS NOT NULL AND search_text <> '' AND rewound_at IS NULL
      GROUP BY agent_id) s
WHERE a.id = s.agent_id;

-- Inserts and deletions: the same one statement as before (the count, the searchable
-- count and the check together), so a step's statements stay as they were.
CREATE OR REPLACE FUNCTION messages_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    missing bigint;
BEGIN
    WITH n AS (
        SELECT agent_id, count(*) AS rows,
               count(*) FILTER (WHERE search_text <> '' AND rewound_at IS NULL) AS searchable
        FROM changed WHERE agent_id IS NOT NULL
        GROUP BY agent_id
    ), counted AS (
        UPDATE agents a SET message_count = greatest(a.message_count + sign * n.rows, 0),
                            searchable_messages = greatest(
                                a.searchable_messages + sign * n.searchable, 0)
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

-- A message that becomes searchable or stops being so in place: rewound and brought back
-- (store/history.py), or edited to or from an empty text. A row trigger on those two
-- columns, fired only when searchability changed: an embedding's update (the jobs write
-- every message once) never reaches it.
CREATE FUNCTION messages_searchability() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agents SET searchable_messages = greatest(
        searchable_messages
        + CASE WHEN NEW.search_text <> '' AND NEW.rewound_at IS NULL THEN 1 ELSE -1 END, 0)
    WHERE id = NEW.agent_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_searchability AFTER UPDATE OF search_text, rewound_at ON messages
    FOR EACH ROW
    WHEN ((OLD.search_text <> '' AND OLD.rewound_at IS NULL)
          IS DISTINCT FROM (NEW.search_text <> '' AND NEW.rewound_at IS NULL))
    EXECUTE FUNCTION messages_searchability();
