"""Telegram's Bot API, the few methods a bot of Cairn's calls (getMe, setWebhook,
deleteWebhook, sendMessage, sendChatAction, getFile and the file download).

The bot's token is part of every URL Telegram serves: httpx logs each request's URL, so a
filter on its logger masks tokens before any handler sees the line.
"""

from __future__ import annotations

import logging
import re
from typing import Any

TIMEOUT_SECONDS = 10.0
# Telegram's own cap on a file a bot may download (getFile): 20 MB.
MAX_FILE_BYTES = 20 * 1024 * 1024
_TOKEN = re.compile(r"/(file/)?bot[0-9]+:[A-Za-z0-9_-]+")


class TelegramError(Exception):
    """Telegram answered `ok: false` (its description and code), or could not be reached."""

    def __init__(self, description: str, code: int | None = None) -> None:
        super().__init__(description)
        self.code = code


class _MaskTokens(logging.Filter):
    """httpx logs each request's URL, which holds a bot's token: the line is formatted
    first (each argument as its own type: `%d` wants a number) and masked after."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a malformed record: logging reports it as its own error
            return True
        masked = _TOKEN.sub(r"/\1bot***", text)
        if masked != text:
            record.msg, record.args = masked, None
        return True


logging.getLogger("httpx").addFilter(_MaskTokens())


class BotApi:
    def __init__(self, base_url: str, token: str) -> None:
        self._base = base_url.rstrip("/")
        self._token = token

    def call(self, method: str, **params: Any) -> Any:
        """One method's `result`; TelegramError for its refusal or no answer."""
        import httpx  # on a first call: every function registers the channel (docs/numbers.md)

        body = {k: v for k, v in params.items() if v is not None}
        try:
            answer = httpx.post(
                f"{self._base}/bot{self._token}/{method}", json=body, timeout=TIMEOUT_SECONDS
            )
            data = answer.json()
        except (httpx.HTTPError, ValueError) as err:
            raise TelegramError(
                f"Telegram's Bot API did not answer {method}: {type(err).__name__}"
            ) from None
        if not isinstance(data, dict) or not data.get("ok"):
            found = data if isinstance(data, dict) else {}
            raise TelegramError(
                str(found.get("description") or f"{method} failed"), found.get("error_code")
            )
        return data.get("result")

    def download(self, file_id: str) -> bytes:
        """A file a user sent (a photo), by its file_id: getFile, then its bytes."""
        found = self.call("getFile", file_id=file_id) or {}
        path, size = found.get("file_path"), found.get("file_size") or 0
        if not path or size > MAX_FILE_BYTES:
            raise TelegramError("Telegram gave no file to download (too large, or gone)")
        import httpx

        try:
            answer = httpx.get(
                f"{self._base}/file/bot{self._token}/{path}", timeout=TIMEOUT_SECONDS
            )
            answer.raise_for_status()
        except httpx.HTTPError as err:
            raise TelegramError(f"downloading a file failed: {type(err).__name__}") from None
        return answer.content
