-- An agent's message vectors enter the HNSW index only once the agent holds 2,000
-- searchable messages (store/messages.py, VECTOR_INDEX_FROM); before that, search compares
-- its rows exactly, as it already did for any agent that is a small share of the table
-- (store/search.py, `exact_vectors`).
--
-- An HNSW insert is nearly all a message's embedding costs PostgreSQL: 0.9-1.4 ms of CPU a
-- vector of 384 dimensions, 2.4-3.5 ms at 1,536, against 0.03-0.05 ms for the row's write
-- without it; a turn embeds two. Most agents never hold enough messages, or enough of the
-- table, for search to gain by the index: the meaning half of a search over 2,000 rows
-- costs 4.4-5.2 ms compared exactly at 384 dimensions (5.8-8.2 through the index), 12.2-12.5
-- at 1,536 (7.3-8.2) (bench/message_vectors.py, docs/memory.md).
--
-- The old indexes go first, so marking the big agents' rows updates no HNSW index.
DROP INDEX messages_embedding_384;
DROP INDEX messages_embedding_768;
DROP INDEX messages_embedding_1024;
DROP INDEX messages_embedding_1536;
DROP INDEX messages_embedding_3072;

ALTER TABLE messages ADD COLUMN indexed boolean NOT NULL DEFAULT false;
UPDATE messages m SET indexed = true
FROM agents a
WHERE a.organization_id = m.organization_id AND a.id = m.agent_id
  AND a.searchable_messages >= 2000 AND m.embedding IS NOT NULL;

CREATE INDEX messages_embedding_384 ON messages
    USING hnsw ((embedding::vector(384)) vector_cosine_ops)
    WHERE indexed AND vector_dims(embedding) = 384;
CREATE INDEX messages_embedding_768 ON messages
    USING hnsw ((embedding::vector(768)) vector_cosine_ops)
    WHERE indexed AND vector_dims(embedding) = 768;
CREATE INDEX messages_embedding_1024 ON messages
    USING hnsw ((embedding::vector(1024)) vector_cosine_ops)
    WHERE indexed AND vector_dims(embedding) = 1024;
CREATE INDEX messages_embedding_1536 ON messages
    USING hnsw ((embedding::vector(1536)) vector_cosine_ops)
    WHERE indexed AND vector_dims(embedding) = 1536;
CREATE INDEX messages_embedding_3072 ON messages
    USING hnsw ((embedding::halfvec(3072)) halfvec_cosine_ops)
    WHERE indexed AND vector_dims(embedding) = 3072;
-- Whether an agent has rows in the index at all: a search of an agent without walks no
-- HNSW index (a filtered walk finding none would read up to hnsw.max_scan_tuples entries).
CREATE INDEX messages_indexed ON messages (organization_id, agent_id) WHERE indexed;
