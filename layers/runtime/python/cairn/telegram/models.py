"""Telegram bots mapped to agents, and what a chat's update means for an agent: which
messages a bot answers in a group, and a reply cut to Telegram's limits."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.ids import AgentId, OrgId, new_id, prefix

BOT_ID = prefix("telegram-bot")
BotMode = Literal["agent_per_chat", "identity_per_user"]
# Telegram's longest message text (sendMessage), in characters.
TEXT_LIMIT = 4096
GROUP_CHATS = ("group", "supergroup")


class TelegramBot(DomainModel):
    id: str = Field(default_factory=lambda: new_id(BOT_ID))
    organization_id: OrgId
    agent_id: AgentId  # the agent answering, or the template of each chat's own agent
    mode: BotMode = "agent_per_chat"
    username: str  # the bot's @name, without the @ (from getMe)
    telegram_id: int  # the bot's own user id (from getMe)
    token: str = Field(repr=False)  # sealed in its row, never shown
    secret_sha256: str = Field(repr=False)  # of the webhook's secret token
    created_at: datetime = Field(default_factory=utc_now)


def addressed(message: dict[str, Any], username: str, telegram_id: int) -> bool:
    """Whether the bot should answer this message: always in a private chat; in a group
    only when it is mentioned (@name, a text mention, a command addressed to it) or the
    message replies to one of the bot's own."""
    if message.get("chat", {}).get("type") not in GROUP_CHATS:
        return True
    replied = message.get("reply_to_message") or {}
    if (replied.get("from") or {}).get("id") == telegram_id:
        return True
    text = message.get("text") or message.get("caption") or ""
    entities = message.get("entities") or message.get("caption_entities") or []
    handle = f"@{username}".lower()
    for entity in entities:
        piece = _utf16_slice(text, entity.get("offset", 0), entity.get("length", 0)).lower()
        kind = entity.get("type")
        if kind == "mention" and piece == handle:
            return True
        if kind == "bot_command" and piece.endswith(handle):
            return True
        if kind == "text_mention" and (entity.get("user") or {}).get("id") == telegram_id:
            return True
    return False


def _utf16_slice(text: str, offset: int, length: int) -> str:
    """Telegram's entity offsets count UTF-16 code units, not characters."""
    units = text.encode("utf-16-le")
    return units[offset * 2 : (offset + length) * 2].decode("utf-16-le", errors="ignore")


def parts(text: str, limit: int = TEXT_LIMIT) -> list[str]:
    """A reply cut into messages Telegram takes: at most `limit` characters each, cut at
    the last line or word break that fits (mid-word only for a word longer
    than a message)."""
    out: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = max(window.rfind("\n"), window.rfind(" "))
        cut = cut if cut > limit // 2 else limit
        out.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        out.append(rest)
    return out


def speaker(user: dict[str, Any] | None) -> str:
    """A Telegram user's name as the agent is told it."""
    user = user or {}
    name = " ".join(p for p in (user.get("first_name"), user.get("last_name")) if p)
    return name or user.get("username") or f"user {user.get('id', '?')}"
