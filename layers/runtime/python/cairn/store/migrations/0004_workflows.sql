-- Approval waits and sleeptime fan-out run as Step Functions workflows (issue 8).

-- The run that answered this run's approval request: one answer per request, the second
-- gets 409 even before the answering run's first step has run.
ALTER TABLE runs ADD COLUMN approval_answered_by text;

-- A background run started by a workflow item: its last step sends this token back.
ALTER TABLE runs ADD COLUMN task_token text;


-- Each sleeptime fan-out reads the transcript from where the previous one (its outbox row)
-- stopped, whether or not that one has finished.
CREATE INDEX outbox_sleeptime ON outbox (agent_id, id) WHERE kind = 'sleeptime';

-- A background run's end hands its workflow item the result (outbox kind task_result).
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('step', 'approval_wait', 'sleeptime', 'embed', 'task_result'));
