-- Search indexes a message or passage with its context: who said it and on which day
-- (docs/memory.md, "How search ranks"). Measured on LoCoMo, a question names people ("What
-- did Caroline research?") whose own turns never say their name; the speaker's name alone
-- took BM25's hit@5 from 0.553 to 0.595.
--
-- The words as the application embeds them (cairn.domain.indexing.indexed_text): the day is
-- the UTC date, spelt in English whatever lc_time says (no TM prefix), so the function is
-- immutable as a generated column needs, though to_char is only marked stable.
CREATE FUNCTION cairn_indexed_text(said_at timestamptz, who text, body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 'On ' || to_char(said_at AT TIME ZONE 'UTC', 'FMDD FMMonth YYYY')
           || CASE WHEN coalesce(who, '') = '' THEN ': ' ELSE ', ' || who || ' said: ' END
           || body;

-- Search matches any of a question's words now (BM25, store/search.py), so a common word's
-- posting list must not be every tenant's: the full-text index leads with the organization
-- and the agent (or archive), and a search reads one agent's postings only.
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- Recall: a message's words, its sender's name (or its role) and its day. A message with
-- no search text (tool returns, heartbeats) keeps an empty vector: it never matches.
-- Rewrites the table once (a generated column cannot change its expression in place).
DROP INDEX messages_fts;
ALTER TABLE messages DROP COLUMN fts;
ALTER TABLE messages ADD COLUMN fts tsvector GENERATED ALWAYS AS (
    CASE WHEN search_text = '' THEN ''::tsvector
         ELSE to_tsvector('english', cairn_indexed_text(created_at, coalesce(name, role), search_text))
    END) STORED;
CREATE INDEX messages_fts ON messages USING gin (organization_id, agent_id, fts);
-- An agent's searchable messages in order: BM25's count of them, and each result's
-- neighbours (the messages before and after it that a person would read).
CREATE INDEX messages_searchable ON messages (agent_id, sequence_id)
    WHERE search_text <> '' AND rewound_at IS NULL;

-- Archival: passages are searched by words too now (full text fused with vectors, as
-- recall is), with their day.
ALTER TABLE passages ADD COLUMN fts tsvector GENERATED ALWAYS AS (
    to_tsvector('english', cairn_indexed_text(created_at, NULL, text))) STORED;
CREATE INDEX passages_fts ON passages USING gin (organization_id, archive_id, fts);
