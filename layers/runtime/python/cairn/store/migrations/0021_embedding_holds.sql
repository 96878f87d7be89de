-- An agent whose embedding endpoint keeps failing is held back: its embedding jobs and the
-- sweeper's backfill skip it until `next_try_at` (doubling after each failure), and after
-- the last allowed failure (`next_try_at` NULL) until its embedding_config changes. Before,
-- an imported agent naming an unreachable endpoint failed every step's job and every
-- sweep, forever. `config` is the embedding_config that failed: another one starts afresh.
CREATE TABLE embedding_holds (
    agent_id         text PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
    organization_id  text NOT NULL,
    config           jsonb,
    failures         integer NOT NULL,
    next_try_at      timestamptz,
    last_error       text NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
