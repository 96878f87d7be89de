-- Message batches (Letta's BatchJob): one row per batch and one per run it started. Its
-- status is read from its runs, so there is nothing to keep in step with them.
CREATE TABLE batches (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    created_by_id    text,
    callback_url     text,
    cancelled_at     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX batches_org_created ON batches (organization_id, created_at, id);

CREATE TABLE batch_runs (
    batch_id         text NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    run_id           text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position         integer NOT NULL,
    PRIMARY KEY (batch_id, run_id)
);
CREATE INDEX batch_runs_run ON batch_runs (run_id);
