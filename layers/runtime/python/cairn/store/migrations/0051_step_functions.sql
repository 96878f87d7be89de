-- More of a step's statements as PL/pgSQL functions, as migration 0050 made the checkpoint's
-- others: the step's and its messages' inserts, the run's end, the window's logged changes,
-- the month's usage (store/steps.py, messages.py, checkpoints.py, history.py, limits.py) and
-- the API key's check of every request (store/tenancy.py). Behind RDS Proxy PostgreSQL
-- planned each on every use. Written by `Native.plpgsql` (tests/integration/
-- test_statement_functions.py holds them alike to their statements). The step's and the
-- key's return their table's row: a column added to `steps` or `api_keys` needs its
-- function made again.
CREATE OR REPLACE FUNCTION cairn_finish_run(text, text, jsonb, timestamp with time zone, timestamp with time zone, jsonb, bigint, text, text) RETURNS TABLE (status text, stop_reason text)
    LANGUAGE plpgsql AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY UPDATE runs SET status = CASE WHEN status = 'cancelled' THEN status ELSE $1 END, stop_reason = CASE WHEN status = 'cancelled' THEN 'cancelled' ELSE $2 END, error = CASE WHEN status = 'cancelled' THEN error ELSE $3 END, completed_at = CASE WHEN status = 'cancelled' THEN coalesce(completed_at, $4) ELSE $5 END, usage = $6, total_duration_ns = $7, updated_at = now() WHERE organization_id = $8 AND id = $9 RETURNING status, stop_reason;
END
$body$;

CREATE OR REPLACE FUNCTION cairn_insert_step(text, text, text, text, integer, text, text, text, text, text, text, integer, integer, integer, integer, integer, integer, integer, integer, jsonb, timestamp with time zone, timestamp with time zone, timestamp with time zone, bigint, bigint) RETURNS TABLE (id text, organization_id text, run_id text, agent_id text, step_index integer, kind text, status text, stop_reason text, provider_name text, model text, model_endpoint text, context_window_limit integer, prompt_tokens integer, completion_tokens integer, total_tokens integer, error jsonb, started_at timestamp with time zone, completed_at timestamp with time zone, created_at timestamp with time zone, feedback text, tags text[], tid text, llm_request_ns bigint, tool_execution_ns bigint, cached_input_tokens integer, cache_write_tokens integer, reasoning_tokens integer, tool_calls integer)
    LANGUAGE plpgsql AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY INSERT INTO steps (id, organization_id, run_id, agent_id, step_index, kind, status, stop_reason, provider_name, model, model_endpoint, context_window_limit, prompt_tokens, completion_tokens, total_tokens, cached_input_tokens, cache_write_tokens, reasoning_tokens, tool_calls, error, started_at, completed_at, created_at, llm_request_ns, tool_execution_ns) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25) ON CONFLICT (run_id, step_index) DO NOTHING RETURNING *;
END
$body$;

CREATE OR REPLACE FUNCTION cairn_insert_messages(jsonb) RETURNS TABLE (id text, sequence_id bigint)
    LANGUAGE plpgsql AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY INSERT INTO messages (id, organization_id, agent_id, role, content, tool_calls, tool_call_id, tool_returns, name, step_id, run_id, group_id, sender_id, otid, batch_item_id, is_err, model, approvals, approve, approval_request_id, denial_reason, created_by_id, created_at, search_text) SELECT id, organization_id, agent_id, role, content, tool_calls, tool_call_id, tool_returns, name, step_id, run_id, group_id, sender_id, otid, batch_item_id, is_err, model, approvals, approve, approval_request_id, denial_reason, created_by_id, created_at, search_text FROM jsonb_populate_recordset(NULL::messages, $1) ON CONFLICT (id) DO NOTHING RETURNING id, sequence_id;
END
$body$;

CREATE OR REPLACE FUNCTION cairn_insert_changes(text, bigint, bigint[], boolean[], text[]) RETURNS void
    LANGUAGE plpgsql AS $body$
BEGIN
    INSERT INTO context_changes (agent_id, version, position, added, message_id) SELECT $1, $2, c.position, c.added, c.message_id FROM unnest($3::bigint[], $4::boolean[], $5::text[]) AS c (position, added, message_id) ON CONFLICT DO NOTHING;
END
$body$;

CREATE OR REPLACE FUNCTION cairn_add_to_month(text, bigint, numeric) RETURNS void
    LANGUAGE plpgsql AS $body$
BEGIN
    INSERT INTO org_usage_months (organization_id, month, tokens, cost_usd) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, $2, $3) ON CONFLICT (organization_id, month) DO UPDATE SET tokens = org_usage_months.tokens + EXCLUDED.tokens, cost_usd = org_usage_months.cost_usd + EXCLUDED.cost_usd;
END
$body$;

CREATE OR REPLACE FUNCTION cairn_authenticate(text) RETURNS TABLE (id text, organization_id text, user_id text, name text, key_hash text, key_prefix text, created_at timestamp with time zone, last_used_at timestamp with time zone, revoked_at timestamp with time zone, minute_start timestamp with time zone, minute_count integer, rate_limit integer, requests_this_minute integer, minute_left_seconds integer)
    LANGUAGE plpgsql AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY WITH found AS ( SELECT k.*, l.requests_per_minute AS rate_limit FROM api_keys k LEFT JOIN org_limits l ON l.organization_id = k.organization_id WHERE k.key_hash = $1 AND k.revoked_at IS NULL ), touched AS ( UPDATE api_keys k SET last_used_at = CASE WHEN found.last_used_at IS NULL OR found.last_used_at < now() - interval '1 minute' THEN now() ELSE k.last_used_at END, minute_start = CASE WHEN found.rate_limit IS NULL THEN k.minute_start ELSE date_trunc('minute', now()) END, minute_count = CASE WHEN found.rate_limit IS NULL THEN k.minute_count WHEN k.minute_start = date_trunc('minute', now()) THEN k.minute_count + 1 ELSE 1 END FROM found WHERE k.id = found.id AND (found.rate_limit IS NOT NULL OR found.last_used_at IS NULL OR found.last_used_at < now() - interval '1 minute') RETURNING k.minute_count ) SELECT found.*, (SELECT minute_count FROM touched) AS requests_this_minute, ceil(60 - extract(epoch FROM now() - date_trunc('minute', now())))::int AS minute_left_seconds FROM found;
END
$body$;

