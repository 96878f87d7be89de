-- Multi-agent groups (round robin): a run's end starts the next speaker's turn through the
-- outbox (kind group_turn), and a group's messages are listed by group.
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('step', 'approval_wait', 'sleeptime', 'embed', 'task_result', 'group_turn'));

CREATE INDEX messages_group ON messages (group_id, sequence_id) WHERE group_id IS NOT NULL;

-- Letta's voice_sleeptime settings, kept so a group reads back as it was written.
ALTER TABLE groups ADD COLUMN max_message_buffer_length integer,
                   ADD COLUMN min_message_buffer_length integer,
                   ADD COLUMN hidden boolean;
