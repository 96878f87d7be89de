-- How often a step was started (its claim took the agent): the watchdog fails a run whose
-- step started this often without finishing (a step that kills its worker), never one
-- whose step was only waiting in a queue (sent, never started).
ALTER TABLE outbox ADD COLUMN claims integer NOT NULL DEFAULT 0;
