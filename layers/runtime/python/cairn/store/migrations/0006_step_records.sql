-- What Letta's step and message routes read beyond the checkpoint: feedback and tags a
-- person gives a step, its transaction id, where its time went, and (when
-- CAIRN_PROVIDER_TRACES is on) the provider request and response it made.
ALTER TABLE steps
    ADD COLUMN feedback          text CHECK (feedback IN ('positive', 'negative')),
    ADD COLUMN tags              text[] NOT NULL DEFAULT '{}',
    ADD COLUMN tid               text,
    ADD COLUMN llm_request_ns    bigint,
    ADD COLUMN tool_execution_ns bigint;

-- Written in the step's checkpoint, so a trace exists exactly when its step does.
CREATE TABLE provider_traces (
    step_id          text PRIMARY KEY REFERENCES steps (id) ON DELETE CASCADE,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    request_json     jsonb NOT NULL,
    response_json    jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- GET /v1/messages/ pages an organization's messages in their one global order.
CREATE INDEX messages_org_sequence ON messages (organization_id, sequence_id);
