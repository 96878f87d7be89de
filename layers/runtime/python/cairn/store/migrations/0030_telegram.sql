-- Telegram bots mapped to agents (services/telegram.py). The bot's token is sealed (AES-GCM
-- bound to the organization and the bot); the webhook's secret token is kept as its SHA-256
-- only. `agent_per_chat`: each chat gets its own agent, made from the bot's agent as a
-- template (telegram_chats); `identity_per_user`: the bot's one agent answers every chat,
-- each Telegram user an identity of it.
CREATE TABLE telegram_bots (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    agent_id         text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    mode             text NOT NULL CHECK (mode IN ('agent_per_chat', 'identity_per_user')),
    username         text NOT NULL,
    telegram_id      bigint NOT NULL,
    token_sealed     bytea NOT NULL,
    secret_sha256    text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX telegram_bots_org ON telegram_bots (organization_id, created_at, id);

CREATE TABLE telegram_chats (
    bot_id    text NOT NULL REFERENCES telegram_bots (id) ON DELETE CASCADE,
    chat_id   bigint NOT NULL,
    agent_id  text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    PRIMARY KEY (bot_id, chat_id)
);

-- Updates taken, by Telegram's update_id: a webhook delivery Telegram retries starts nothing
-- twice. Kept two days (Telegram keeps an undelivered update for one), pruned by the sweeper.
CREATE TABLE telegram_updates (
    bot_id       text NOT NULL REFERENCES telegram_bots (id) ON DELETE CASCADE,
    update_id    bigint NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bot_id, update_id)
);
CREATE INDEX telegram_updates_received ON telegram_updates (received_at);

-- How many parts of a run's reply were sent: a reply job delivered again sends the rest.
CREATE TABLE telegram_replies (
    run_id      text PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    parts_sent  integer NOT NULL DEFAULT 0
);

ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('step', 'approval_wait', 'sleeptime', 'embed', 'task_result', 'group_turn',
                    'agent_message', 'telegram_reply'));
