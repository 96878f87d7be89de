-- Messages scheduled to an agent: once at a time, or on a cron expression in a timezone.
-- `next_run_at` is the next occurrence (NULL once a one-time schedule has fired); each
-- occurrence starts a run whose id is derived from the schedule and the occurrence, so a
-- retried delivery starts it once.
CREATE TABLE schedules (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    messages         jsonb NOT NULL,
    kind             text NOT NULL CHECK (kind IN ('once', 'cron')),
    run_at           timestamptz,
    cron             text,
    timezone         text NOT NULL DEFAULT 'UTC',
    next_run_at      timestamptz,
    last_run_at      timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'once') = (run_at IS NOT NULL) AND (kind = 'cron') = (cron IS NOT NULL))
);
CREATE INDEX schedules_agent ON schedules (agent_id, created_at, id);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE next_run_at IS NOT NULL;
