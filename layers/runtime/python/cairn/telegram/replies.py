"""A Telegram conversation's side of a run: the chat's typing indicator while a step runs,
and the reply when the run ends (queued by its last checkpoint, kind telegram_reply).

A reply is cut at Telegram's limit and sent part by part, each part recorded once Telegram
took it, so a reply job delivered again sends only the parts not yet sent. (A crash between
Telegram's answer and the record sends that one part twice: the Bot API has no idempotency
key to prevent it.)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from cairn.domain.base import Value
from cairn.domain.runs import OutboxCommand, Run, run_command
from cairn.run.backends.agent_messages import said
from cairn.run.driving.worker import poison
from cairn.run.runtime import QueueKind, Runtime
from cairn.store import messages, runs
from cairn.telegram import store
from cairn.telegram.bot_api import TIMEOUT_SECONDS, BotApi, TelegramError
from cairn.telegram.models import parts
from cairn.telegram.settings import TelegramSettings

logger = logging.getLogger(__name__)
# Telegram shows "typing..." for 5 s or until the bot's next message: renewed within that.
TYPING_EVERY_SECONDS = 4.0
# Telegram's refusals that another delivery would only repeat (a chat gone, a bot blocked).
FINAL_CODES = (400, 403)


def api_for(rt: Runtime, org_id: str, bot_id: str) -> BotApi | None:
    with rt.db.connection() as conn:
        bot = store.get(conn, rt.engine.sealer, org_id, bot_id)
    return (
        None
        if bot is None
        else BotApi(TelegramSettings.within(rt.settings).telegram_api_url, bot.token)
    )


def channel(bot_id: str, chat_id: object, message_id: object) -> dict[str, Any]:
    """What a conversation's run keeps in its metadata (`channel`): the chat to answer."""
    return {"name": "telegram", "bot_id": bot_id, "chat_id": chat_id, "message_id": message_id}


def chat_of(channel: object) -> dict[str, Any] | None:
    """The chat a run's (or its step's) channel names, if it is a Telegram chat."""
    if not isinstance(channel, dict) or channel.get("name") != "telegram":
        return None
    return channel if isinstance(channel.get("bot_id"), str) else None


def reply_command(run: Run) -> OutboxCommand | None:
    """A conversation's reply, sent to its chat once its run has ended (None for any other
    run, and for a cancelled one: nobody is waiting for it)."""
    chat = chat_of(run.metadata.get("channel"))
    if chat is None or run.status == "cancelled":
        return None
    payload = {
        "kind": "telegram_reply",
        "organization_id": run.organization_id,
        "run_id": run.id,
        "bot_id": chat["bot_id"],
        "chat_id": chat["chat_id"],
        "reply_to": chat.get("message_id"),
    }
    return run_command(run, "telegram_reply", "telegram_reply", payload)


@contextmanager
def typing(rt: Runtime, org_id: str, step: dict[str, Any]) -> Iterator[None]:
    """While the step runs, its chat shows the bot typing (nothing for a step of no chat:
    a conversation's step message carries its run's channel, `domain.runs.step_command`)."""
    chat = chat_of(step.get("channel"))
    api = api_for(rt, org_id, chat["bot_id"]) if chat else None
    if api is None or chat is None:
        yield
        return
    stop = threading.Event()

    def keep() -> None:
        while True:
            try:
                api.call("sendChatAction", chat_id=chat["chat_id"], action="typing")
            except TelegramError as err:  # cosmetic: the step goes on without it
                logger.info("typing indicator for a chat of %s: %s", chat["bot_id"], err)
                return
            if stop.wait(TYPING_EVERY_SECONDS):
                return

    keeper = threading.Thread(target=keep, name="telegram-typing", daemon=True)
    keeper.start()
    try:
        yield
    finally:
        stop.set()
        # A typing action still on its way would land after the reply and show the bot
        # typing for 5 s more: the step ends once it has (one call's timeout at most).
        keeper.join(TIMEOUT_SECONDS)


def reply(rt: Runtime, payload: dict[str, Any]) -> str:
    """Send what the run said to its chat, the parts not sent yet; raises (the queue
    delivers it again) while Telegram cannot take it for now."""
    org, run_id = payload["organization_id"], payload["run_id"]
    api = api_for(rt, org, payload["bot_id"])
    with rt.db.connection() as conn:
        run = runs.get_run(conn, org, run_id)
        made = (
            []
            if run is None
            else messages.list_for_agent(
                conn, org, run.agent_id, run_id=run_id, order="asc", limit=1000
            )
        )
        done = store.parts_sent(conn, run_id)
    if api is None or run is None:
        return "bot or run gone"
    pieces = parts(words(run, said(made)))
    for n in range(done, len(pieces)):
        first = n == 0 and payload.get("reply_to") is not None
        try:
            api.call(
                "sendMessage",
                chat_id=payload["chat_id"],
                text=pieces[n],
                reply_parameters={
                    "message_id": payload["reply_to"],
                    "allow_sending_without_reply": True,
                }
                if first
                else None,
            )
        except TelegramError as err:
            if err.code in FINAL_CODES:
                logger.warning("reply of run %s refused by Telegram: %s", run_id, err)
                return f"refused: {err}"[:200]
            raise
        with rt.db.connection() as conn:
            store.set_parts_sent(conn, run_id, n + 1)
    return f"sent {len(pieces) - done} of {len(pieces)}"


def words(run: Run, said: list[str]) -> str:
    """What the chat is told: the agent's words, or why there are none."""
    if said:
        return "\n\n".join(said)
    if run.stop_reason == "requires_approval":
        return "(A tool call is waiting for approval before I can go on.)"
    if run.status == "failed":
        return "Sorry, I could not answer that: something went wrong on my side."
    return ""


class TelegramReply(Value):
    kind: Literal["telegram_reply"]
    organization_id: str
    run_id: str
    bot_id: str
    chat_id: int
    reply_to: int | None = None


def _reply(rt: Runtime, payload: dict[str, Any], _: OutboxCommand | None) -> str:
    return reply(rt, payload)


def _reply_dead(rt: Runtime, _: dict[str, Any], body: str, receives: int) -> str:
    return poison(rt, "step-dlq", body, "a Telegram reply failed on each delivery", receives)


# Telegram keeps an update it could not deliver for 24 hours: after two days its id can no
# longer come back, and the record of having taken it goes.
UPDATE_DAYS = 2


def prune_updates(rt: Runtime, _: dict[str, str]) -> int:
    """The sweeper's phase: forget the updates too old to be delivered again."""
    with rt.db.connection() as conn:
        return store.prune_updates(conn, older_than_seconds=UPDATE_DAYS * 86_400)


# What the channel adds to the core, registered at assembly: its queue message, the typing
# indicator around a conversation's steps, its reply when a run ends, its sweeper phase.
KINDS = {"telegram_reply": QueueKind(TelegramReply, _reply, _reply_dead)}
AROUND_STEP = (typing,)
RUN_END = (reply_command,)
SWEEP = (("telegram_updates", prune_updates),)
