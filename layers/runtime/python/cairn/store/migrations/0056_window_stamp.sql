-- A step's claim reads only the entries appended to its agent's context window since this
-- process last read it, when nothing else in the window changed (store/claim.py,
-- store/parsed_windows.py). Reading each entry's message version cost PostgreSQL and the
-- process about 9 us an entry a step, the most of what a message cost that grew with the
-- conversation (docs/numbers.md).
--
-- `window_stamp` moves with every change to the window but an append: an entry removed or
-- renumbered, an entry written before one already there, a message's returned columns
-- updated (an edit, a rewind's or a memory edit's new system message). By trigger, so no
-- writer can forget it. Writers take the agent row before a message row (the edit, store/
-- messages.py; a checkpoint's messages' count, a rewind's and an agent update's lock): the
-- triggers then never take them the other way round.
ALTER TABLE agents ADD COLUMN window_stamp bigint NOT NULL DEFAULT 0;

CREATE FUNCTION cairn_window_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'messages' THEN
        UPDATE agents SET window_stamp = window_stamp + 1 WHERE id = NEW.agent_id;
    ELSIF TG_OP = 'INSERT' THEN
        -- An append writes after every entry already there: otherwise the window moved.
        -- Asked first, so an append (every step's) updates nothing; from each agent's first
        -- new position, so a large insert (an agent imported) is not compared pairwise.
        IF EXISTS (SELECT 1 FROM (SELECT agent_id, min(position) AS first FROM written
                                  GROUP BY agent_id) w
                   JOIN context_entries e ON e.agent_id = w.agent_id AND e.position > w.first
                   WHERE NOT EXISTS (SELECT 1 FROM written n
                                     WHERE n.agent_id = e.agent_id AND n.position = e.position))
        THEN
            UPDATE agents a SET window_stamp = a.window_stamp + 1
            FROM (SELECT agent_id, min(position) AS first FROM written GROUP BY agent_id) w
            WHERE a.id = w.agent_id AND EXISTS (
                SELECT 1 FROM context_entries e
                WHERE e.agent_id = w.agent_id AND e.position > w.first
                  AND NOT EXISTS (SELECT 1 FROM written n
                                  WHERE n.agent_id = e.agent_id AND n.position = e.position));
        END IF;
    ELSE
        UPDATE agents SET window_stamp = window_stamp + 1
        WHERE id IN (SELECT agent_id FROM gone);
    END IF;
    RETURN NULL;
END
$$;

-- The columns a step reads of a message (store/messages.py MESSAGE_COLUMNS): an embedding
-- written or a rewind's mark moves nothing.
CREATE TRIGGER messages_window_moved
    AFTER UPDATE OF id, organization_id, agent_id, role, content, tool_calls, tool_call_id,
                    tool_returns, name, step_id, run_id, group_id, sender_id, otid,
                    batch_item_id, is_err, model, approvals, approve, approval_request_id,
                    denial_reason, created_by_id, created_at, sequence_id
    ON messages FOR EACH ROW EXECUTE FUNCTION cairn_window_moved();
CREATE TRIGGER context_entries_written
    AFTER INSERT ON context_entries REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_window_moved();
CREATE TRIGGER context_entries_gone
    AFTER DELETE ON context_entries REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_window_moved();
CREATE TRIGGER context_entries_changed
    AFTER UPDATE ON context_entries REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION cairn_window_moved();

-- The claim with the stamp (migration 0048 made the claim a function): three parameters more
-- (the held window's agent, stamp and last position) and two columns more (the stamp read,
-- whether the window came whole); the agent's message ids are the window's, made by the
-- process. A function of its own: the release before this one calls `cairn_claim` while
-- this migration runs (docs/deploy.md, "Upgrades"); the release after this one drops it.
CREATE OR REPLACE FUNCTION cairn_claim_2(text, text, integer, integer, boolean, integer, double precision, text, text, text, bigint, bigint, text, text) RETURNS TABLE (run text, done boolean, org_full boolean, held double precision, next_command text, agent text, window_stamp bigint, whole boolean, context_positions bigint[], blocks text, tools_version text, tools text, context_versions text[], context text, recall_count bigint, archive text, archival_count bigint, archival_tags text[], journal jsonb, previous_kind text, folders text, spent text)
    LANGUAGE plpgsql AS $body$
#variable_conflict use_column
BEGIN
    RETURN QUERY WITH run AS ( SELECT * FROM runs WHERE organization_id = $1 AND id = $2 ), done AS ( SELECT kind FROM steps WHERE run_id = $2 AND step_index = $3 ), org AS ( SELECT CASE WHEN $4 <= 0 OR a.lease_run_id = $2 THEN false ELSE cairn_org_full($1, $2, coalesce((SELECT max_runs FROM org_limits WHERE organization_id = $1), $4), $5, $6) END AS is_full FROM run JOIN agents a ON a.organization_id = $1 AND a.id = run.agent_id ), held AS ( SELECT greatest(extract(epoch FROM (run.request_config ->> 'coalesce_until')::timestamptz - now()), 0)::float8 AS seconds FROM run WHERE $3 = 0 AND run.request_config ? 'coalesce_until' ), lease AS ( UPDATE agents a SET lease_run_id = $2, lease_expires_at = now() + make_interval(secs => $7) FROM run WHERE a.organization_id = $1 AND a.id = run.agent_id AND run.status NOT IN ('completed', 'failed', 'cancelled') AND NOT EXISTS (SELECT 1 FROM done) AND NOT EXISTS (SELECT 1 FROM held WHERE seconds > 0) AND (a.lease_run_id IS NULL OR a.lease_run_id = $2 OR a.lease_expires_at < now()) AND (a.lease_run_id = $2 OR NOT coalesce((SELECT is_full FROM org), false)) AND (a.lease_run_id = $2 OR NOT EXISTS ( SELECT 1 FROM runs older WHERE older.agent_id = a.id AND older.id <> run.id AND older.status IN ('created', 'running') AND (older.created_at, older.id) < (run.created_at, run.id))) RETURNING a.* ), running AS ( UPDATE runs SET status = 'running', updated_at = now() WHERE organization_id = $1 AND id = $2 AND status = 'created' AND EXISTS (SELECT 1 FROM lease) ), started AS ( UPDATE outbox SET claims = claims + 1 WHERE organization_id = $1 AND dedup_key = $8 AND EXISTS (SELECT 1 FROM lease) ), archive AS ( SELECT ar.* FROM lease l JOIN archives_agents aa ON aa.agent_id = l.id AND aa.is_owner JOIN archives ar ON ar.id = aa.archive_id ORDER BY ar.created_at, ar.id LIMIT 1 ), parsed AS MATERIALIZED ( SELECT unnest(string_to_array($9, ',')) AS version ), stamp AS ( SELECT a.window_stamp, a.id = $10 AND a.window_stamp = $11 AS held FROM run JOIN agents a ON a.organization_id = $1 AND a.id = run.agent_id ), entries AS ( SELECT e.position, e.message_id, false AS appended FROM lease l JOIN context_entries e ON e.agent_id = l.id WHERE NOT coalesce((SELECT held FROM stamp), false) UNION ALL SELECT e.position, e.message_id, true FROM lease l JOIN context_entries e ON e.agent_id = l.id AND e.position > $12 WHERE (SELECT held FROM stamp) ), tools_held AS ( SELECT coalesce(string_agg(t.id || '@' || t.xmin::text, ',' ORDER BY at.attached_at, t.name), '') AS version FROM lease l JOIN agents_tools at ON at.agent_id = l.id JOIN tools t ON t.id = at.tool_id ), in_window AS ( SELECT w.position, w.message_id, w.version, w.sent, CASE WHEN w.sent THEN (SELECT to_json(m) FROM (SELECT id, organization_id, agent_id, role, content, tool_calls, tool_call_id, tool_returns, name, step_id, run_id, group_id, sender_id, otid, batch_item_id, is_err, model, approvals, approve, approval_request_id, denial_reason, created_by_id, created_at, sequence_id FROM messages WHERE id = w.message_id) m) END AS body FROM (SELECT v.position, v.message_id, v.version, v.appended OR (v.version IN (SELECT version FROM parsed)) IS NOT TRUE AS sent FROM (SELECT e.position, e.message_id, e.appended, (SELECT id || '@' || xmin::text FROM messages WHERE id = e.message_id) AS version FROM entries e OFFSET 0) v) w ) SELECT (SELECT to_jsonb(run) FROM run)::text AS run, EXISTS (SELECT 1 FROM done) AS done, NOT EXISTS (SELECT 1 FROM lease) AND coalesce((SELECT is_full FROM org), false) AS org_full, CASE WHEN NOT EXISTS (SELECT 1 FROM lease) THEN (SELECT seconds FROM held) END AS held, (SELECT to_jsonb(o) FROM outbox o WHERE o.organization_id = $1 AND o.dedup_key = $13)::text AS next_command, (SELECT to_jsonb(l)::text FROM lease l) AS agent, (SELECT window_stamp FROM stamp) AS window_stamp, NOT coalesce((SELECT held FROM stamp), false) AS whole, coalesce((SELECT array_agg(position ORDER BY position) FROM in_window), '{}') AS context_positions, (SELECT coalesce(json_agg(b ORDER BY ab.attached_at, b.id), '[]')::text FROM lease l JOIN agents_blocks ab ON ab.agent_id = l.id JOIN blocks b ON b.id = ab.block_id) AS blocks, (SELECT version FROM tools_held) AS tools_version, CASE WHEN (SELECT version FROM tools_held) IS DISTINCT FROM $14 THEN (SELECT coalesce(json_agg(t ORDER BY at.attached_at, t.name), '[]')::text FROM lease l JOIN agents_tools at ON at.agent_id = l.id JOIN tools t ON t.id = at.tool_id) END AS tools, coalesce((SELECT array_agg(version ORDER BY position) FROM in_window), '{}') AS context_versions, (SELECT coalesce(json_agg(body ORDER BY position) FILTER (WHERE sent), '[]') FROM in_window)::text AS context, coalesce((SELECT l.message_count FROM lease l), 0) AS recall_count, (SELECT to_jsonb(archive) FROM archive)::text AS archive, coalesce((SELECT s.passages FROM archive JOIN archive_stats s ON s.archive_id = archive.id), 0) AS archival_count, coalesce((SELECT s.tags FROM archive JOIN archive_stats s ON s.archive_id = archive.id), '{}') AS archival_tags, (SELECT coalesce(jsonb_object_agg(key, payload), '{}') FROM step_journal WHERE run_id = $2 AND step_index = $3) AS journal, (SELECT kind FROM steps WHERE run_id = $2 AND step_index = $3 - 1) AS previous_kind, (SELECT (SELECT coalesce(json_agg(json_build_object( 'id', f.id, 'name', f.name, 'description', f.description, 'instructions', f.instructions, 'files', (SELECT coalesce(json_agg(json_build_object( 'agent_id', l.id, 'file_id', x.id, 'folder_id', x.folder_id, 'organization_id', x.organization_id, 'file_name', x.file_name, 'file_type', x.file_type, 'is_open', coalesce(v.is_open, false), 'visible_content', v.visible_content, 'start_line', v.start_line, 'end_line', v.end_line, 'last_accessed_at', coalesce(v.last_accessed_at, x.created_at)) ORDER BY x.file_name), '[]') FROM files x LEFT JOIN files_agents v ON v.file_id = x.id AND v.agent_id = l.id WHERE x.folder_id = f.id AND x.processing_status = 'completed')) ORDER BY fa.created_at, f.id), '[]') FROM folders_agents fa JOIN folders f ON f.id = fa.folder_id WHERE fa.agent_id = l.id) ::text FROM lease l) AS folders, (SELECT CASE WHEN m.tokens + m.embedding_tokens >= l.monthly_tokens THEN 'monthly_tokens' WHEN m.cost_usd >= l.monthly_cost_usd THEN 'monthly_cost_usd' END FROM org_limits l JOIN org_usage_months m ON m.organization_id = l.organization_id AND m.month = date_trunc('month', now() AT TIME ZONE 'UTC')::date WHERE l.organization_id = $1) AS spent;
END
$body$;
