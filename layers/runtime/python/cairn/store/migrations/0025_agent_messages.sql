-- Letta's multi-agent tools: an agent's async message to another starts that agent's run
-- through the outbox (kind agent_message), written in the sender's checkpoint, so the
-- message is delivered exactly once whatever crashes.
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('step', 'approval_wait', 'sleeptime', 'embed', 'task_result', 'group_turn',
                    'agent_message'));
