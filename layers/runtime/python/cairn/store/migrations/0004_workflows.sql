-- Approval waits and sleeptime fan-out run as Step Functions workflows (issue 8).

-- The run that answered this run's approval request: one answer per request, the second
-- gets 409 even before the answering run's first step has run.
ALTER TABLE runs ADD COLUMN approval_answered_by text;

-- A background run started by a workflow item: its last step sends this token back.
ALTER TABLE runs ADD COLUMN task_token text;

