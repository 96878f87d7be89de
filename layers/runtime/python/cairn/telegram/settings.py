"""The Telegram channel's settings (a group assembly adds to the process's settings)."""

from __future__ import annotations

from typing import ClassVar

from cairn.config import Group


class TelegramSettings(Group):
    ENV: ClassVar[dict[str, str]] = {"telegram_api_url": "CAIRN_TELEGRAM_API_URL"}
    # Telegram's Bot API (a local fake in the tests). The webhook address Telegram is told
    # for a bot made without one is the API's public URL (CAIRN_PUBLIC_URL).
    telegram_api_url: str = "https://api.telegram.org"
