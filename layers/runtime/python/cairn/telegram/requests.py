"""Connecting a Telegram bot to an agent (Cairn's own route)."""

from __future__ import annotations

from pydantic import Field

from cairn.domain.ids import AgentId
from cairn.services.requests.base import RequestBody
from cairn.telegram.models import BotMode


class TelegramBotCreate(RequestBody):
    agent_id: AgentId
    # The token @BotFather gave: "<digits>:<35 characters>".
    token: str = Field(pattern=r"^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$", repr=False)
    mode: BotMode = "agent_per_chat"
    # Where Telegram reaches this API (its public address); CAIRN_PUBLIC_URL if not given.
    webhook_base_url: str | None = Field(
        default=None, pattern=r"^https?://[^\s]+$", max_length=2000
    )
