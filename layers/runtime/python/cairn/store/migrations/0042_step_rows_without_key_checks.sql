-- A step's rows without a key check each (issue 65): every row inserted into a table with a
-- foreign key runs a check of its own (`SELECT 1 FROM ONLY agents ... FOR KEY SHARE`), and a
-- message's step wrote thirteen: its messages, their places in the context window, the
-- window's changes, the version that logs them, the step's row and its continuation in the
-- outbox. What the keys protected, and what does it now:
--
-- * No row of an agent or run that is gone. Every write of these rows holds the agent's row
--   (or the run's) in the same transaction: the checkpoint's UPDATE agents checks its version
--   and its UPDATE runs must find the run (store/checkpoints.py), agents.update and
--   history.bump update the agent, a new run's row keeps its key to the agent, and messages
--   are counted on the agent by the trigger below. So a deletion waits for the writer to
--   commit, or the writer finds the row gone and rolls back. For messages, written by many
--   paths, the count's trigger now refuses an insert for an agent that does not exist, with
--   the key's own error (23503): one check a statement, not one a row.
-- * Their removal with the agent or the run: store/agents.delete and store/runs.delete_ended
--   remove them after the agent's or run's row, each in its own statement (each sees what a
--   writer that held the row committed meanwhile).
-- * A place in a window holding a message that is gone: a group's messages are deleted with
--   their places (store/groups.delete_messages); no other path deletes a message.
ALTER TABLE messages DROP CONSTRAINT messages_agent_id_fkey;
ALTER TABLE context_entries DROP CONSTRAINT context_entries_message_id_fkey;
ALTER TABLE context_changes DROP CONSTRAINT context_changes_agent_id_fkey;
ALTER TABLE agent_versions DROP CONSTRAINT agent_versions_agent_id_fkey;
ALTER TABLE steps DROP CONSTRAINT steps_run_id_fkey;
ALTER TABLE outbox DROP CONSTRAINT outbox_agent_id_fkey;
ALTER TABLE outbox DROP CONSTRAINT outbox_run_id_fkey;

CREATE OR REPLACE FUNCTION messages_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    missing bigint;
BEGIN
    -- One statement: the count and the check together (each statement a trigger runs is one
    -- more a step pays for).
    WITH n AS (
        SELECT agent_id, count(*) AS rows FROM changed WHERE agent_id IS NOT NULL
        GROUP BY agent_id
    ), counted AS (
        UPDATE agents a SET message_count = greatest(a.message_count + sign * n.rows, 0)
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
