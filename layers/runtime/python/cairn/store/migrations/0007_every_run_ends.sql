-- Every run reaches an end (issue 17): the sweeper's watchdog finds runs whose step was
-- sent and never ran (a lost queue message, a worker killed mid-step), and what reaches a
-- dead-letter queue in a shape nobody can act on is kept here for inspection.

-- How many times the watchdog re-sent a command that made no progress; past its budget the
-- run fails with the reason instead.
ALTER TABLE outbox ADD COLUMN redrives integer NOT NULL DEFAULT 0;
-- A run's latest step command (and deleting a run's outbox rows with it).
CREATE INDEX outbox_run ON outbox (run_id, id) WHERE run_id IS NOT NULL;
-- The watchdog reads unfinished runs oldest-progress first, across organizations.
CREATE INDEX runs_unfinished ON runs (updated_at) WHERE status IN ('created', 'running');

CREATE TABLE dead_letters (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source       text NOT NULL,
    body         text NOT NULL,
    reason       text NOT NULL,
    receives     integer NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A server-side deadline for every statement and every open transaction: no request waits
-- on the database forever (a lock held by a dead client, a plan gone wrong). The longest
-- statement a request makes takes milliseconds; a migration sets its own (none). Applies
-- to sessions opened after this one.
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I SET statement_timeout = %L', current_database(), '60s');
    EXECUTE format('ALTER DATABASE %I SET idle_in_transaction_session_timeout = %L',
                   current_database(), '60s');
END
$$;
