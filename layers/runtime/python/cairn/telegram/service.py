"""Telegram bots (Cairn's own routes): a bot connected to an agent, and the updates Telegram
delivers to its webhook turned into the agent's turns.

`agent_per_chat`: each chat talks to an agent of its own, made from the bot's agent (its
template) on the chat's first message. `identity_per_user`: every chat talks to the bot's
one agent, each Telegram user an identity of it (the message's sender). In a group the bot
answers only messages that mention it or reply to it. A photo (or a still sticker) is an
image of the message. The turn runs in the background; the worker shows the bot typing
while each step runs, and the run's end queues the reply (telegram/replies.py).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from typing import Any

from cairn.domain.messages import Message
from cairn.domain.runs import RunOptions
from cairn.errors import (
    CairnError,
    InvalidArgumentError,
    UnauthorizedError,
    found,
)
from cairn.run.driving import lifecycle
from cairn.run.driving.dispatch import publish_and_mark
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services import identities, messages
from cairn.services.images import MAX_IMAGE_BYTES
from cairn.services.requests import (
    CreateAgent,
    CreateBlock,
    IdentityCreate,
    LettaRequest,
    MessageCreate,
)
from cairn.store import identities as identity_rows
from cairn.telegram import replies, store
from cairn.telegram.bot_api import BotApi, TelegramError
from cairn.telegram.models import GROUP_CHATS, TelegramBot, addressed, speaker
from cairn.telegram.requests import TelegramBotCreate
from cairn.telegram.settings import TelegramSettings

logger = logging.getLogger(__name__)
WEBHOOK_PATH = "/v1/telegram/webhook/{bot_id}"
SECRET_HEADER = "x-telegram-bot-api-secret-token"


def create(rt: Runtime, org: str, req: TelegramBotCreate) -> TelegramBot:
    """Connect a bot: its token checked with Telegram (getMe), its webhook set with a
    secret token of ours; a 400 saying why when Telegram refuses, and nothing kept."""
    with rt.db.connection() as conn:
        agent_service.fetch(conn, org, req.agent_id)
    base = req.webhook_base_url or rt.settings.public_url
    if not base:
        raise InvalidArgumentError(
            "webhook_base_url: the address Telegram reaches this API at "
            "is needed (or set CAIRN_PUBLIC_URL)"
        )
    api = BotApi(TelegramSettings.within(rt.settings).telegram_api_url, req.token)
    try:
        me = api.call("getMe") or {}
    except TelegramError as err:
        raise InvalidArgumentError(f"token: Telegram refused it ({err})") from None
    secret = secrets.token_urlsafe(32)
    bot = TelegramBot(
        organization_id=org,
        agent_id=req.agent_id,
        mode=req.mode,
        token=req.token,
        username=str(me.get("username") or ""),
        telegram_id=int(me.get("id") or 0),
        secret_sha256=_digest(secret),
    )
    with rt.db.transaction() as conn:  # kept only once Telegram took the webhook
        kept = store.add(conn, rt.engine.sealer, bot)
        url = base.rstrip("/") + WEBHOOK_PATH.format(bot_id=bot.id)
        try:
            api.call("setWebhook", url=url, secret_token=secret, allowed_updates=["message"])
        except TelegramError as err:
            raise InvalidArgumentError(f"Telegram refused the webhook {url}: {err}") from None
    return kept


def list_bots(rt: Runtime, org: str) -> list[TelegramBot]:
    with rt.db.connection() as conn:
        return store.list_bots(conn, rt.engine.sealer, org)


def retrieve(rt: Runtime, org: str, bot_id: str) -> TelegramBot:
    with rt.db.connection() as conn:
        return _fetch(conn, rt, org, bot_id)


def delete(rt: Runtime, org: str, bot_id: str) -> None:
    """Disconnect a bot: its webhook removed (if Telegram can be reached), its row gone.
    The agents it made for chats stay (their memories are the organization's)."""
    bot = retrieve(rt, org, bot_id)
    try:
        BotApi(TelegramSettings.within(rt.settings).telegram_api_url, bot.token).call(
            "deleteWebhook"
        )
    except TelegramError as err:
        logger.warning("deleteWebhook for bot %s failed: %s", bot_id, err)
    with rt.db.transaction() as conn:
        store.delete(conn, org, bot_id)


def receive(rt: Runtime, bot_id: str, secret: str | None, update: dict[str, Any]) -> str:
    """One update Telegram delivered: proven by the bot's secret token, taken once (by its
    update_id), started as a background turn of the chat's agent. Returns what was done."""
    with rt.db.connection() as conn:
        bot = found(
            store.for_webhook(conn, rt.engine.sealer, bot_id), f"Telegram bot {bot_id} not found"
        )
    if not secret or not hmac.compare_digest(_digest(secret), bot.secret_sha256):
        raise UnauthorizedError("The webhook's secret token does not match")
    message = update.get("message")
    if not isinstance(message, dict) or not isinstance(update.get("update_id"), int):
        return "ignored: not a message"
    sender = message.get("from") or {}
    if sender.get("is_bot") or not addressed(message, bot.username, bot.telegram_id):
        return "ignored: not addressed to the bot"
    with rt.db.connection() as conn:  # a retried delivery: no download, no agent made
        if store.taken(conn, bot.id, update["update_id"]):
            return "already taken"
    api = BotApi(TelegramSettings.within(rt.settings).telegram_api_url, bot.token)
    chat = message.get("chat") or {}
    content = _content(api, message)
    if content is None:
        return "ignored: nothing the agent can read"
    agent_id, sender_id = _agent_for(rt, bot, chat, sender)
    text = f"[{speaker(sender)}] " if chat.get("type") in GROUP_CHATS else ""
    create_message = MessageCreate(
        role="user", name=_name(sender), sender_id=sender_id, content=_with_prefix(content, text)
    )
    try:  # an image whose bytes are none, say: the chat is told why, once
        inputs = messages.inputs(
            rt, bot.organization_id, agent_id, LettaRequest(messages=[create_message])
        )
    except CairnError as err:
        return _refuse(rt, bot, api, chat, update["update_id"], f"I could not read that: {err}")
    return _start(rt, bot, api, agent_id, chat, message, update["update_id"], inputs)


def _start(
    rt: Runtime,
    bot: TelegramBot,
    api: BotApi,
    agent_id: str,
    chat: dict[str, Any],
    message: dict[str, Any],
    update_id: int,
    inputs: list[Message],
) -> str:
    meta = {
        "run_type": "telegram",
        "channel": replies.channel(bot.id, chat.get("id"), message.get("message_id")),
    }
    # One chat's burst is one turn when its agent coalesces; a shared agent's chats never
    # join each other's turns (the reply goes to the chat that started it).
    options = RunOptions(background=True, metadata=meta, coalesce=bot.mode == "agent_per_chat")
    try:
        with rt.db.transaction() as conn:
            if not store.take_update(conn, bot.id, update_id):
                return "already taken"
            started = lifecycle.start_run(
                rt.db,
                bot.organization_id,
                agent_id,
                inputs,
                options,
                conn=conn,
                org_cap=rt.settings.org_max_runs,
            )
    except CairnError as err:  # waiting for an approval, say: the chat is told, once
        return _refuse(rt, bot, api, chat, update_id, f"I cannot take messages right now: {err}")
    if not started.joined:
        publish_and_mark(rt.db, rt.queue, started.command)
    _tell(api, "sendChatAction", chat_id=chat.get("id"), action="typing")
    return f"{'joined' if started.joined else 'started'} {started.run.id}"


def _refuse(
    rt: Runtime, bot: TelegramBot, api: BotApi, chat: dict[str, Any], update_id: int, why: str
) -> str:
    """The update taken (once) without a turn, and the chat told why."""
    with rt.db.transaction() as conn:
        if not store.take_update(conn, bot.id, update_id):
            return "already taken"
    _tell(api, "sendMessage", chat_id=chat.get("id"), text=why)
    return f"refused: {why}"[:200]


def _tell(api: BotApi, method: str, **params: Any) -> None:
    """A word or the typing indicator to the chat now; a failure only logged."""
    try:
        api.call(method, **params)
    except TelegramError as err:
        logger.info("telling a chat failed: %s", err)


def _content(api: BotApi, message: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The message as Letta's content parts: its text or caption, its photo (the largest
    size within the image limit) or still sticker; None when it has neither."""
    parts: list[dict[str, Any]] = []
    text = message.get("text") or message.get("caption")
    if text:
        parts.append({"type": "text", "text": text})
    file_id, media = _picture(message)
    too_large = {
        "type": "text",
        "text": "(the user sent an image too large to read: over "
        f"{MAX_IMAGE_BYTES // (1024 * 1024)} MiB; ask for a smaller one)",
    }
    if file_id is None and message.get("photo"):  # every size of it over the limit
        parts.append(too_large)
    if file_id is not None:
        try:
            data = api.download(file_id)
        except TelegramError as err:
            parts.append({"type": "text", "text": f"(an image that could not be read: {err})"})
        else:
            if len(data) > MAX_IMAGE_BYTES:  # its size was not told, or not true
                parts.append(too_large)
            else:
                source = {
                    "type": "base64",
                    "media_type": media,
                    "data": base64.b64encode(data).decode(),
                }
                parts.append({"type": "image", "source": source})
    return parts or None


def _picture(message: dict[str, Any]) -> tuple[str | None, str]:
    photos = [p for p in message.get("photo") or () if (p.get("file_size") or 0) <= MAX_IMAGE_BYTES]
    if photos:
        largest = max(photos, key=lambda p: p.get("width", 0) * p.get("height", 0))
        return str(largest["file_id"]), "image/jpeg"  # Telegram sends photos as JPEG
    sticker = message.get("sticker") or {}
    if sticker and not sticker.get("is_animated") and not sticker.get("is_video"):
        return str(sticker["file_id"]), "image/webp"
    return None, ""


def _with_prefix(parts: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    if not prefix:
        return parts
    if parts and parts[0]["type"] == "text":
        return [{"type": "text", "text": prefix + parts[0]["text"]}, *parts[1:]]
    return [{"type": "text", "text": prefix.strip()}, *parts]


def _name(user: dict[str, Any]) -> str | None:
    """OpenAI's `name` takes letters, digits, _ and - only."""
    raw = user.get("username") or user.get("first_name") or ""
    clean = "".join(c for c in str(raw) if c.isascii() and (c.isalnum() or c in "_-"))[:64]
    return clean or None


def _agent_for(
    rt: Runtime, bot: TelegramBot, chat: dict[str, Any], sender: dict[str, Any]
) -> tuple[str, str | None]:
    """The agent answering this chat, and the message's sender identity (shared agent)."""
    org = bot.organization_id
    if bot.mode == "identity_per_user":
        key = f"telegram-{bot.telegram_id}-{sender.get('id')}"
        with rt.db.connection() as conn:
            found = identity_rows.by_key(conn, org, key, None)
        if found is None:
            try:
                found = identities.create(
                    rt,
                    org,
                    IdentityCreate(
                        identifier_key=key,
                        name=speaker(sender)[:500],
                        identity_type="user",
                        agent_ids=[bot.agent_id],
                    ),
                )
            except CairnError:  # another delivery made it a moment ago
                with rt.db.connection() as conn:
                    found = identity_rows.by_key(conn, org, key, None)
        if found is not None and bot.agent_id not in found.agent_ids:
            identities.link(rt, org, found.id, "agent", bot.agent_id, on=True)
        return bot.agent_id, found.id if found is not None else None
    chat_id = int(chat.get("id") or 0)
    with rt.db.connection() as conn:
        existing = store.chat_agent(conn, bot.id, chat_id)
    if existing is not None:
        return existing, None
    made = _agent_from_template(rt, bot, chat)
    with rt.db.transaction() as conn:
        kept = store.set_chat_agent(conn, bot.id, chat_id, made)
    if kept != made:  # another delivery for the chat made one first: that one answers
        agent_service.delete(rt, org, made)
    return kept, None


def _agent_from_template(rt: Runtime, bot: TelegramBot, chat: dict[str, Any]) -> str:
    """A chat's own agent: the bot's agent's settings, memory blocks (their values now),
    tools, rules and secrets; no history."""
    view = agent_service.retrieve(rt, bot.organization_id, bot.agent_id)
    template = view.agent
    title = chat.get("title") or speaker(chat)  # a group's title, a private chat's person
    req = CreateAgent(
        name=f"{template.name} · {title}"[:200],
        description=template.description,
        metadata=template.metadata,
        tags=[*template.tags, "telegram"],
        agent_type=template.agent_type,
        system=template.system,
        memory_blocks=[
            CreateBlock(
                label=b.label,
                value=b.value,
                limit=b.limit,
                description=b.description,
                metadata=b.metadata,
                read_only=b.read_only,
            )
            for b in view.blocks
        ],
        tool_ids=[t.id for t in view.tools],
        include_base_tools=False,
        include_base_tool_rules=False,
        tool_rules=template.tool_rules,
        llm_config=template.llm_config,
        embedding_config=template.embedding_config,
        compaction_settings=template.compaction_settings,
        timezone=template.timezone,
        secrets={s.key: s.value for s in view.secrets} or None,
    )
    return agent_service.create(rt, bot.organization_id, req).agent.id


def _fetch(conn: Any, rt: Runtime, org: str, bot_id: str) -> TelegramBot:
    return found(store.get(conn, rt.engine.sealer, org, bot_id), f"Telegram bot {bot_id} not found")


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
