-- An agent's history, for time travel (docs/history.md): the agent at any past version.
--
-- `agent_versions`: one row per version a checkpoint (a step), a create, an API update, a
-- rewind or a fork left. It keeps what is small and changes often in full (which blocks were
-- attached, each at which version: block_history holds their values; the tools attached) and
-- what is large only when that version wrote it (the settings; the system message's text).
--
-- `context_changes`: the context window's history as changes, not copies: each write of
-- `context_entries` logs the entries it added and removed at the version that made them. The
-- window at a version is the last change at each position up to it (store/history.py).
CREATE TABLE agent_versions (
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    version          bigint NOT NULL,
    organization_id  text NOT NULL,
    kind             text NOT NULL
                     CHECK (kind IN ('start', 'create', 'step', 'update', 'rewind', 'fork')),
    step_id          text,
    run_id           text,
    blocks           jsonb NOT NULL DEFAULT '{}',
    tool_ids         text[] NOT NULL DEFAULT '{}',
    config           jsonb,
    system           jsonb,
    passage_ids      text[] NOT NULL DEFAULT '{}',
    detail           jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, version)
);

CREATE TABLE context_changes (
    agent_id    text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    version     bigint NOT NULL,
    position    bigint NOT NULL,
    added       boolean NOT NULL,
    message_id  text NOT NULL,
    PRIMARY KEY (agent_id, version, position, added)
);

-- Messages a rewind took out of the agent's memory: still in recall (listed), marked.
ALTER TABLE messages ADD COLUMN rewound_at timestamptz;

-- Where the history of an agent made before it starts: its state now, as version 'start'.
INSERT INTO context_changes (agent_id, version, position, added, message_id)
SELECT e.agent_id, a.version, e.position, true, e.message_id
FROM context_entries e JOIN agents a ON a.id = e.agent_id;

INSERT INTO agent_versions (agent_id, version, organization_id, kind, blocks, tool_ids, config,
                            system, created_at)
SELECT a.id, a.version, a.organization_id, 'start',
       (SELECT coalesce(jsonb_object_agg(b.id, b.version), '{}') FROM agents_blocks ab
        JOIN blocks b ON b.id = ab.block_id WHERE ab.agent_id = a.id),
       ARRAY(SELECT t.tool_id FROM agents_tools t WHERE t.agent_id = a.id
             ORDER BY t.attached_at, t.tool_id),
       jsonb_build_object(
           'name', a.name, 'description', a.description, 'agent_type', a.agent_type,
           'system', a.system, 'llm_config', a.llm_config,
           'embedding_config', a.embedding_config,
           'compaction_settings', a.compaction_settings, 'tool_rules', a.tool_rules,
           'tags', to_jsonb(a.tags), 'metadata', a.metadata, 'timezone', a.timezone,
           'max_files_open', a.max_files_open,
           'per_file_view_window_char_limit', a.per_file_view_window_char_limit,
           'enable_sleeptime', a.enable_sleeptime,
           'message_buffer_autoclear', a.message_buffer_autoclear),
       (SELECT m.content FROM context_entries e JOIN messages m ON m.id = e.message_id
        WHERE e.agent_id = a.id AND m.role = 'system' ORDER BY e.position LIMIT 1),
       a.updated_at
FROM agents a;
