-- Cairn's initial schema. Every tenant-owned row carries organization_id, and every lookup a
-- step makes has an index. Ids are Letta's `<prefix>-<uuid4>` strings, made by the application.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Tenancy ------------------------------------------------------------------------------------

CREATE TABLE organizations (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name             text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX users_org ON users (organization_id);

-- Only the SHA-256 of a key is stored; the key itself is shown once, when it is made.
CREATE TABLE api_keys (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id          text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name             text NOT NULL DEFAULT '',
    key_hash         text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    key_prefix       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    last_used_at     timestamptz,
    revoked_at       timestamptz
);
CREATE INDEX api_keys_org ON api_keys (organization_id);

-- Agents -------------------------------------------------------------------------------------

CREATE TABLE agents (
    id                               text PRIMARY KEY,
    organization_id                  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name                             text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    description                      text,
    agent_type                       text NOT NULL,
    system                           text NOT NULL DEFAULT '',
    message_ids                      text[] NOT NULL DEFAULT '{}',
    llm_config                       jsonb NOT NULL,
    embedding_config                 jsonb,
    compaction_settings              jsonb,
    tool_rules                       jsonb NOT NULL DEFAULT '[]',
    tags                             text[] NOT NULL DEFAULT '{}',
    metadata                         jsonb NOT NULL DEFAULT '{}',
    timezone                         text NOT NULL DEFAULT 'UTC',
    max_files_open                   integer CHECK (max_files_open > 0),
    per_file_view_window_char_limit  integer CHECK (per_file_view_window_char_limit > 0),
    enable_sleeptime                 boolean NOT NULL DEFAULT false,
    message_buffer_autoclear         boolean NOT NULL DEFAULT false,
    hidden                           boolean NOT NULL DEFAULT false,
    project_id                       text,
    last_run_completion              timestamptz,
    last_run_duration_ms             bigint,
    last_stop_reason                 text,
    created_by_id                    text,
    last_updated_by_id               text,
    version                          bigint NOT NULL DEFAULT 1,
    created_at                       timestamptz NOT NULL DEFAULT now(),
    updated_at                       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agents_org_created ON agents (organization_id, created_at DESC, id DESC);
CREATE INDEX agents_org_name ON agents (organization_id, name);
CREATE INDEX agents_tags ON agents USING gin (tags);
CREATE INDEX agents_name_trgm ON agents USING gin (name gin_trgm_ops);

-- Core memory --------------------------------------------------------------------------------

CREATE TABLE blocks (
    id                  text PRIMARY KEY,
    organization_id     text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    label               text NOT NULL
                        CHECK (char_length(label) <= 100 AND label ~ '^[A-Za-z0-9_][A-Za-z0-9_.\-/]*$'),
    value               text NOT NULL DEFAULT '',
    "limit"             integer NOT NULL DEFAULT 20000 CHECK ("limit" > 0),
    description         text,
    read_only           boolean NOT NULL DEFAULT false,
    hidden              boolean NOT NULL DEFAULT false,
    metadata            jsonb NOT NULL DEFAULT '{}',
    project_id          text,
    is_template         boolean NOT NULL DEFAULT false,
    template_name       text,
    created_by_id       text,
    last_updated_by_id  text,
    version             bigint NOT NULL DEFAULT 1,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- char_length counts code points, as Python's len() does.
    CONSTRAINT blocks_value_within_limit CHECK (char_length(value) <= "limit"),
    -- Target of agents_blocks' composite key, so a label change follows into the join table.
    CONSTRAINT blocks_id_label UNIQUE (id, label)
);
CREATE INDEX blocks_org_created ON blocks (organization_id, created_at DESC, id DESC);
CREATE INDEX blocks_org_label ON blocks (organization_id, label);

-- One row per version of a block: what every edit left behind (undo/redo, audit).
CREATE TABLE block_history (
    block_id         text NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    version          bigint NOT NULL,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    label            text NOT NULL,
    value            text NOT NULL,
    "limit"          integer NOT NULL,
    description      text,
    read_only        boolean NOT NULL,
    metadata         jsonb NOT NULL DEFAULT '{}',
    actor_type       text NOT NULL CHECK (actor_type IN ('user', 'agent', 'system')),
    actor_id         text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (block_id, version)
);

-- A block may be shared by several agents; an agent has at most one block per label.
CREATE TABLE agents_blocks (
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    block_id         text NOT NULL,
    block_label      text NOT NULL,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    attached_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, block_id),
    CONSTRAINT agents_blocks_one_label UNIQUE (agent_id, block_label),
    FOREIGN KEY (block_id, block_label) REFERENCES blocks (id, label)
        ON UPDATE CASCADE ON DELETE CASCADE
);
CREATE INDEX agents_blocks_block ON agents_blocks (block_id);

-- Tools --------------------------------------------------------------------------------------

CREATE TABLE tools (
    id                         text PRIMARY KEY,
    organization_id            text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name                       text NOT NULL
                               CHECK (char_length(name) BETWEEN 1 AND 48 AND name ~ '^[A-Za-z0-9_\-]+$'),
    description                text,
    tool_type                  text NOT NULL DEFAULT 'custom',
    source_type                text NOT NULL DEFAULT 'python',
    source_code                text,
    json_schema                jsonb NOT NULL DEFAULT '{}',
    args_json_schema           jsonb,
    return_char_limit          integer NOT NULL DEFAULT 50000 CHECK (return_char_limit > 0),
    tags                       text[] NOT NULL DEFAULT '{}',
    pip_requirements           jsonb,
    npm_requirements           jsonb,
    default_requires_approval  boolean NOT NULL DEFAULT false,
    enable_parallel_execution  boolean NOT NULL DEFAULT false,
    metadata                   jsonb NOT NULL DEFAULT '{}',
    project_id                 text,
    created_by_id              text,
    last_updated_by_id         text,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tools_name_per_org UNIQUE (organization_id, name)
);
CREATE INDEX tools_org_created ON tools (organization_id, created_at DESC, id DESC);

CREATE TABLE agents_tools (
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    tool_id          text NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    attached_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, tool_id)
);
CREATE INDEX agents_tools_tool ON agents_tools (tool_id);

-- Messages (recall memory) -------------------------------------------------------------------

CREATE TABLE messages (
    id                   text PRIMARY KEY,
    organization_id      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    agent_id             text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    -- One global sequence: monotonic per agent because an agent's writes are serialised
    -- (FIFO group + the agent row's version check), so per-agent order is insert order.
    sequence_id          bigint GENERATED ALWAYS AS IDENTITY,
    role                 text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool', 'approval')),
    content              jsonb NOT NULL DEFAULT '[]',
    tool_calls           jsonb,
    tool_call_id         text,
    tool_returns         jsonb,
    name                 text,
    step_id              text,
    run_id               text,
    group_id             text,
    sender_id            text,
    otid                 text,
    batch_item_id        text,
    is_err               boolean NOT NULL DEFAULT false,
    model                text,
    approvals            jsonb,
    approve              boolean,
    approval_request_id  text,
    denial_reason        text,
    created_by_id        text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    -- What recall search reads (set by the application: user text, assistant text, the
    -- message argument of send_message); the tsvector follows it.
    search_text          text NOT NULL DEFAULT '',
    fts                  tsvector GENERATED ALWAYS AS (to_tsvector('english', search_text)) STORED,
    -- Filled after the checkpoint, off the step's path; dimension-less so models coexist.
    embedding            vector,
    embedding_model      text,
    CONSTRAINT messages_agent_sequence UNIQUE (agent_id, sequence_id)
);
CREATE INDEX messages_org_created ON messages (organization_id, created_at);
CREATE INDEX messages_run ON messages (run_id, sequence_id) WHERE run_id IS NOT NULL;
CREATE INDEX messages_step ON messages (step_id) WHERE step_id IS NOT NULL;
CREATE INDEX messages_fts ON messages USING gin (fts);
CREATE INDEX messages_unembedded ON messages (organization_id, sequence_id) WHERE embedding IS NULL;

-- Archival memory ----------------------------------------------------------------------------

CREATE TABLE archives (
    id                text PRIMARY KEY,
    organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name              text NOT NULL,
    description       text,
    embedding_config  jsonb,
    metadata          jsonb NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX archives_org ON archives (organization_id, created_at DESC);

CREATE TABLE archives_agents (
    archive_id       text NOT NULL REFERENCES archives (id) ON DELETE CASCADE,
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    is_owner         boolean NOT NULL DEFAULT true,
    PRIMARY KEY (archive_id, agent_id)
);
CREATE INDEX archives_agents_agent ON archives_agents (agent_id);

CREATE TABLE passages (
    id                text PRIMARY KEY,
    organization_id   text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    archive_id        text NOT NULL REFERENCES archives (id) ON DELETE CASCADE,
    text              text NOT NULL CHECK (text <> ''),
    content_hash      text NOT NULL,
    embedding         vector,
    embedding_config  jsonb,
    tags              text[] NOT NULL DEFAULT '{}',
    metadata          jsonb NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    -- An identical text is stored once per archive (Letta stores it again).
    CONSTRAINT passages_unique_text UNIQUE (archive_id, content_hash)
);
CREATE INDEX passages_archive_created ON passages (archive_id, created_at, id);
CREATE INDEX passages_tags ON passages USING gin (tags);

-- Runs, steps, journal, outbox ---------------------------------------------------------------

CREATE TABLE runs (
    id                    text PRIMARY KEY,
    organization_id       text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    agent_id              text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    status                text NOT NULL DEFAULT 'created'
                          CHECK (status IN ('created', 'running', 'completed', 'failed', 'cancelled')),
    stop_reason           text,
    background            boolean NOT NULL DEFAULT false,
    metadata              jsonb NOT NULL DEFAULT '{}',
    request_config        jsonb NOT NULL DEFAULT '{}',
    usage                 jsonb NOT NULL DEFAULT '{}',
    error                 jsonb,
    callback_url          text,
    callback_sent_at      timestamptz,
    callback_status_code  integer,
    callback_error        text,
    approval_task_token   text,
    ttft_ns               bigint,
    total_duration_ns     bigint,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    completed_at          timestamptz
);
CREATE INDEX runs_agent_created ON runs (agent_id, created_at DESC, id DESC);
CREATE INDEX runs_org_created ON runs (organization_id, created_at DESC, id DESC);
CREATE INDEX runs_active ON runs (agent_id) WHERE status IN ('created', 'running');

CREATE TABLE steps (
    id                    text PRIMARY KEY,
    organization_id       text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    run_id                text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    agent_id              text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    step_index            integer NOT NULL CHECK (step_index >= 0),
    kind                  text NOT NULL DEFAULT 'llm' CHECK (kind IN ('llm', 'compaction', 'approval')),
    status                text NOT NULL DEFAULT 'success' CHECK (status IN ('success', 'failed', 'cancelled')),
    stop_reason           text,
    provider_name         text,
    model                 text,
    model_endpoint        text,
    context_window_limit  integer,
    prompt_tokens         integer NOT NULL DEFAULT 0,
    completion_tokens     integer NOT NULL DEFAULT 0,
    total_tokens          integer NOT NULL DEFAULT 0,
    error                 jsonb,
    started_at            timestamptz,
    completed_at          timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    -- The checkpoint's natural key: a redelivered step finds its row and does nothing.
    CONSTRAINT steps_run_index UNIQUE (run_id, step_index)
);
CREATE INDEX steps_agent ON steps (agent_id, created_at DESC);

-- What a step must not redo when retried: the LLM response ("llm"), a tool's result
-- ("tool:<tool_call_id>"). Written before the effects that follow from it.
CREATE TABLE step_journal (
    run_id           text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_index       integer NOT NULL,
    key              text NOT NULL,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    payload          jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, step_index, key)
);

CREATE TABLE outbox (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    run_id           text REFERENCES runs (id) ON DELETE CASCADE,
    kind             text NOT NULL CHECK (kind IN ('step', 'approval_wait', 'sleeptime', 'embed')),
    payload          jsonb NOT NULL DEFAULT '{}',
    dedup_key        text NOT NULL UNIQUE,
    created_at       timestamptz NOT NULL DEFAULT now(),
    sent_at          timestamptz,
    attempts         integer NOT NULL DEFAULT 0,
    last_error       text
);
CREATE INDEX outbox_unsent ON outbox (created_at) WHERE sent_at IS NULL;

-- Groups (sleeptime) -------------------------------------------------------------------------

CREATE TABLE groups (
    id                         text PRIMARY KEY,
    organization_id            text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    manager_type               text NOT NULL,
    -- Deleting the primary agent deletes its group (and, through the engine, its sleeptime agents).
    manager_agent_id           text REFERENCES agents (id) ON DELETE CASCADE,
    description                text NOT NULL DEFAULT '',
    sleeptime_agent_frequency  integer CHECK (sleeptime_agent_frequency > 0),
    turns_counter              integer NOT NULL DEFAULT -1,
    last_processed_message_id  text,
    max_turns                  integer,
    termination_token          text,
    shared_block_ids           text[] NOT NULL DEFAULT '{}',
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX groups_org_created ON groups (organization_id, created_at DESC, id DESC);
CREATE INDEX groups_manager ON groups (manager_agent_id);

CREATE TABLE groups_agents (
    group_id         text NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    position         integer NOT NULL DEFAULT 0,
    PRIMARY KEY (group_id, agent_id)
);
CREATE INDEX groups_agents_agent ON groups_agents (agent_id);
