"""A local fake of Telegram's Bot API, speaking its wire protocol: POST /bot<token>/<method>
with a JSON body answered `{"ok": true, "result": ...}` (or `ok: false` with Telegram's
error_code and description), and GET /file/bot<token>/<path> for a file's bytes. It knows
one bot (its token, id and username), records every call, keeps the webhook set on it, and
can post an update to that webhook as Telegram does (with the secret token header).
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

TOKEN = "7000000001:AAbcdefghijklmnopqrstuvwxyz0123456789"
BOT_ID, BOT_USERNAME = 7000000001, "cairn_test_bot"


@dataclass
class Call:
    method: str
    body: dict[str, Any]


class FakeTelegram:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.files: dict[str, bytes] = {}  # file_id -> bytes
        self.webhook: dict[str, Any] = {}
        self.failures: dict[str, list[tuple[int, str]]] = {}  # method -> answers to give first
        self._lock = threading.Lock()
        self._ids = itertools.count(1000)
        self._updates = itertools.count(1)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else {}
                parts = self.path.strip("/").split("/")
                if len(parts) != 2 or parts[0] != f"bot{TOKEN}":
                    return self._answer(
                        401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
                    )
                status, answer = fake._handle(parts[1], body)
                self._answer(status, answer)

            def do_GET(self) -> None:
                prefix = f"/file/bot{TOKEN}/"
                data = (
                    fake.files.get(self.path[len(prefix) :])
                    if self.path.startswith(prefix)
                    else None
                )
                if data is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _answer(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeTelegram:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handle(self, method: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.calls.append(Call(method, body))
            queued = self.failures.get(method)
            if queued:
                code, description = queued.pop(0)
                return code, {"ok": False, "error_code": code, "description": description}
        if method == "getMe":
            return 200, {
                "ok": True,
                "result": {
                    "id": BOT_ID,
                    "is_bot": True,
                    "first_name": "Cairn",
                    "username": BOT_USERNAME,
                },
            }
        if method == "setWebhook":
            self.webhook = dict(body)
            return 200, {"ok": True, "result": True}
        if method == "deleteWebhook":
            self.webhook = {}
            return 200, {"ok": True, "result": True}
        if method == "sendChatAction":
            return 200, {"ok": True, "result": True}
        if method == "sendMessage":
            text = str(body.get("text") or "")
            if not text or len(text) > 4096:  # Telegram's own checks
                return 400, {
                    "ok": False,
                    "error_code": 400,
                    "description": "Bad Request: message text is empty or too long",
                }
            sent = {
                "message_id": next(self._ids),
                "chat": {"id": body.get("chat_id")},
                "from": {"id": BOT_ID, "is_bot": True},
                "text": text,
            }
            return 200, {"ok": True, "result": sent}
        if method == "getFile":
            file_id = str(body.get("file_id"))
            if file_id not in self.files:
                return 400, {
                    "ok": False,
                    "error_code": 400,
                    "description": "Bad Request: invalid file_id",
                }
            return 200, {
                "ok": True,
                "result": {
                    "file_id": file_id,
                    "file_path": file_id,
                    "file_size": len(self.files[file_id]),
                },
            }
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}

    def sent(self, method: str = "sendMessage") -> list[dict[str, Any]]:
        with self._lock:
            return [c.body for c in self.calls if c.method == method]

    def deliver(
        self, message: dict[str, Any], *, secret: str | None = None, update_id: int | None = None
    ) -> httpx.Response:
        """Post an update to the webhook as Telegram does (its secret token unless told)."""
        update = {
            "update_id": update_id if update_id is not None else next(self._updates),
            "message": message,
        }
        token = self.webhook.get("secret_token") if secret is None else secret
        return httpx.post(
            str(self.webhook["url"]),
            json=update,
            timeout=60,
            headers={"X-Telegram-Bot-Api-Secret-Token": str(token)},
        )


def private_message(
    text: str, *, user_id: int = 42, first_name: str = "Ada", message_id: int = 1, **extra: Any
) -> dict[str, Any]:
    user = {"id": user_id, "is_bot": False, "first_name": first_name, "username": first_name}
    return {
        "message_id": message_id,
        "date": 1764160000,
        "from": user,
        "chat": {"id": user_id, "type": "private", "first_name": first_name},
        "text": text,
        **extra,
    }


def group_message(
    text: str,
    *,
    chat_id: int = -100123,
    user_id: int = 42,
    first_name: str = "Ada",
    message_id: int = 1,
    **extra: Any,
) -> dict[str, Any]:
    user = {"id": user_id, "is_bot": False, "first_name": first_name, "username": first_name}
    return {
        "message_id": message_id,
        "date": 1764160000,
        "from": user,
        "chat": {"id": chat_id, "type": "supergroup", "title": "Trail crew"},
        "text": text,
        **extra,
    }
