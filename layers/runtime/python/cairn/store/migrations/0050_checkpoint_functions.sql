-- The checkpoint's statements PostgreSQL still planned on every step without server-side
-- prepared statements (behind RDS Proxy), as PL/pgSQL functions, as migrations 0048 and 0049
-- made the claim and a run's start: the version's insert (store/history.py), the window's
-- new entries (store/context.py), the agent's update (store/checkpoints.py) and the steps
-- waiting for the agent a run releases (store/outbox.py), together about 0.54 ms of its CPU a
-- message. Written by `Native.plpgsql`; a change to one of those statements needs a migration
-- making its function again (tests/integration/test_statement_functions.py says so, and
-- prints the text).
CREATE OR REPLACE FUNCTION cairn_insert_version(bigint, text, text, text, boolean, text, text[], jsonb, text, text) RETURNS void
    LANGUAGE plpgsql AS $body$
BEGIN
    INSERT INTO agent_versions (agent_id, version, organization_id, kind, step_id, run_id, blocks, tool_ids, config, system, passage_ids, detail) SELECT a.id, $1, a.organization_id, $2, $3, $4, (SELECT coalesce(jsonb_object_agg(b.id, b.version), '{}') FROM agents_blocks ab JOIN blocks b ON b.id = ab.block_id WHERE ab.agent_id = a.id), CASE WHEN $2 <> 'step' THEN ARRAY(SELECT t.tool_id FROM agents_tools t WHERE t.agent_id = a.id ORDER BY t.attached_at, t.tool_id) END, CASE WHEN $5 THEN jsonb_build_object('name', a.name, 'description', a.description, 'agent_type', a.agent_type, 'system', a.system, 'llm_config', a.llm_config, 'embedding_config', a.embedding_config, 'compaction_settings', a.compaction_settings, 'tool_rules', a.tool_rules, 'tags', to_jsonb(a.tags), 'metadata', a.metadata, 'timezone', a.timezone, 'max_files_open', a.max_files_open, 'per_file_view_window_char_limit', a.per_file_view_window_char_limit, 'enable_sleeptime', a.enable_sleeptime, 'message_buffer_autoclear', a.message_buffer_autoclear) END, (SELECT m.content FROM messages m WHERE m.id = $6 AND m.role = 'system'), $7, $8 FROM agents a WHERE a.organization_id = $9 AND a.id = $10 ON CONFLICT (agent_id, version) DO NOTHING;
END
$body$;

CREATE OR REPLACE FUNCTION cairn_insert_entries(text, bigint[], text[], text) RETURNS TABLE (message_id text)
    LANGUAGE plpgsql AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY INSERT INTO context_entries (agent_id, position, message_id, organization_id) SELECT $1, e.position, m.id, m.organization_id FROM unnest($2::bigint[], $3::text[]) AS e (position, message_id) JOIN messages m ON m.id = e.message_id AND m.organization_id = $4 RETURNING message_id;
END
$body$;

CREATE OR REPLACE FUNCTION cairn_checkpoint_agent(integer, integer, boolean, text, timestamp with time zone, text, text, text, bigint) RETURNS TABLE (id text)
    LANGUAGE plpgsql AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY UPDATE agents SET context_tokens = $1, context_tokens_upto = $2, last_stop_reason = CASE WHEN $3 THEN $4 ELSE last_stop_reason END, last_run_completion = CASE WHEN $3 THEN $5 ELSE last_run_completion END, version = version + 1, updated_at = now(), (lease_run_id, lease_expires_at) = ( SELECT CASE WHEN done THEN NULL ELSE lease_run_id END, CASE WHEN done THEN NULL ELSE lease_expires_at END FROM (SELECT lease_run_id = $6 AND EXISTS ( SELECT 1 FROM runs WHERE id = $6 AND status IN ('completed', 'failed', 'cancelled')) AS done) AS ended_run) WHERE organization_id = $7 AND id = $8 AND version = $9 RETURNING id;
END
$body$;

CREATE OR REPLACE FUNCTION cairn_waiting_for_release(text, text, text, integer) RETURNS TABLE (id bigint, organization_id text, agent_id text, run_id text, kind text, payload jsonb, dedup_key text, created_at timestamp with time zone, sent_at timestamp with time zone, attempts integer, last_error text, redrives integer, claims integer)
    LANGUAGE plpgsql AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY WITH mine AS ( SELECT * FROM outbox WHERE organization_id = $1 AND agent_id = $2 AND sent_at IS NULL AND run_id IS DISTINCT FROM $3 FOR UPDATE SKIP LOCKED ), others AS ( SELECT o.* FROM outbox o JOIN agents a ON a.organization_id = o.organization_id AND a.id = o.agent_id WHERE $4 > 0 AND o.organization_id = $1 AND o.sent_at IS NULL AND o.kind = 'step' AND o.agent_id <> $2 AND (a.lease_run_id IS NULL OR a.lease_expires_at < now()) ORDER BY o.id LIMIT greatest(coalesce((SELECT max_runs FROM org_limits WHERE organization_id = $1), $4) - ( SELECT count(*) FROM agents WHERE organization_id = $1 AND lease_run_id IS NOT NULL AND lease_expires_at >= now()), 0) FOR UPDATE OF o SKIP LOCKED ) (SELECT * FROM mine ORDER BY id) UNION ALL (SELECT * FROM others ORDER BY id);
END
$body$;

