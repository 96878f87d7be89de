-- Files in folders. The original bytes live in the document store (S3 on AWS), named by
-- `object_key`, never in a row; the parsed text is `file_contents` (what the file tools
-- open and grep), its chunks `file_passages` (what semantic search reads). A file's name is
-- unique in its folder (Letta's duplicate_handling decides what a second upload does).
CREATE TABLE files (
    id                       text PRIMARY KEY,
    organization_id          text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    folder_id                text NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    file_name                text NOT NULL,
    original_file_name       text NOT NULL,
    file_type                text NOT NULL,
    file_size                bigint NOT NULL,
    object_key               text NOT NULL,
    processing_status        text NOT NULL DEFAULT 'pending'
        CHECK (processing_status IN ('pending', 'parsing', 'embedding', 'completed', 'error')),
    error_message            text,
    total_chunks             integer,
    chunks_embedded          integer,
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now(),
    UNIQUE (folder_id, file_name)
);
CREATE INDEX files_folder_page ON files (folder_id, created_at, id);
-- Files whose processing has not finished: what the sweeper resumes.
CREATE INDEX files_unfinished ON files (updated_at)
    WHERE processing_status IN ('pending', 'parsing', 'embedding');

CREATE TABLE file_contents (
    file_id          text PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    text             text NOT NULL
);

-- A file's chunks in order (`chunk_index`): written with their embeddings, a batch at a
-- time, so a job resumed after a crash goes on from the first chunk without one.
CREATE TABLE file_passages (
    id                text PRIMARY KEY,
    organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    folder_id         text NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    file_id           text NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    chunk_index       integer NOT NULL,
    text              text NOT NULL,
    embedding         vector NOT NULL,
    embedding_config  jsonb NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (file_id, chunk_index)
);
CREATE INDEX file_passages_folder ON file_passages (folder_id, created_at, id);
CREATE INDEX file_passages_embedding_384 ON file_passages
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE vector_dims(embedding) = 384;
CREATE INDEX file_passages_embedding_768 ON file_passages
    USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE vector_dims(embedding) = 768;
CREATE INDEX file_passages_embedding_1024 ON file_passages
    USING hnsw ((embedding::vector(1024)) vector_cosine_ops) WHERE vector_dims(embedding) = 1024;
CREATE INDEX file_passages_embedding_1536 ON file_passages
    USING hnsw ((embedding::vector(1536)) vector_cosine_ops) WHERE vector_dims(embedding) = 1536;
CREATE INDEX file_passages_embedding_3072 ON file_passages
    USING hnsw ((embedding::halfvec(3072)) halfvec_cosine_ops)
    WHERE vector_dims(embedding) = 3072;

-- An agent's view of a file of a folder attached to it (Letta's files_agents): open or
-- closed, the window shown, when it was last touched (least recently used closes first).
CREATE TABLE files_agents (
    agent_id          text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    file_id           text NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    folder_id         text NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    file_name         text NOT NULL,
    is_open           boolean NOT NULL DEFAULT false,
    visible_content   text,
    start_line        integer,
    end_line          integer,
    last_accessed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, file_id)
);
CREATE INDEX files_agents_file ON files_agents (file_id);

