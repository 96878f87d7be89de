-- Vector search over archival passages and recall messages.
--
-- Embedding columns stay dimension-less so models of different sizes coexist; each size in
-- common use gets its own partial HNSW index (cosine) over the column cast to that size,
-- and queries use the same cast and predicate. pgvector indexes `vector` up to 2,000
-- dimensions, so 3,072-dimension models (text-embedding-3-large) are indexed as halfvec.
CREATE INDEX passages_embedding_384 ON passages
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE vector_dims(embedding) = 384;
CREATE INDEX passages_embedding_768 ON passages
    USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE vector_dims(embedding) = 768;
CREATE INDEX passages_embedding_1024 ON passages
    USING hnsw ((embedding::vector(1024)) vector_cosine_ops) WHERE vector_dims(embedding) = 1024;
CREATE INDEX passages_embedding_1536 ON passages
    USING hnsw ((embedding::vector(1536)) vector_cosine_ops) WHERE vector_dims(embedding) = 1536;
CREATE INDEX passages_embedding_3072 ON passages
    USING hnsw ((embedding::halfvec(3072)) halfvec_cosine_ops)
    WHERE vector_dims(embedding) = 3072;

CREATE INDEX messages_embedding_384 ON messages
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE vector_dims(embedding) = 384;
CREATE INDEX messages_embedding_768 ON messages
    USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE vector_dims(embedding) = 768;
CREATE INDEX messages_embedding_1024 ON messages
    USING hnsw ((embedding::vector(1024)) vector_cosine_ops) WHERE vector_dims(embedding) = 1024;
CREATE INDEX messages_embedding_1536 ON messages
    USING hnsw ((embedding::vector(1536)) vector_cosine_ops) WHERE vector_dims(embedding) = 1536;
CREATE INDEX messages_embedding_3072 ON messages
    USING hnsw ((embedding::halfvec(3072)) halfvec_cosine_ops)
    WHERE vector_dims(embedding) = 3072;

-- Messages still to embed, per agent (the backfill reads this).
CREATE INDEX messages_to_embed ON messages (agent_id, sequence_id)
    WHERE embedding IS NULL AND search_text <> '';
