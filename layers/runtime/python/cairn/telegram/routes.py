"""Telegram bots (Cairn's own routes: Letta 0.16.1 has none). The webhook takes no API key:
Telegram proves itself with the bot's secret token (telegram/service.py)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http
from cairn.api.letta.times import iso
from cairn.telegram import service as telegram
from cairn.telegram.models import TelegramBot
from cairn.telegram.requests import TelegramBotCreate

router = APIGatewayHttpRouter()
WEBHOOK_PREFIX = "/v1/telegram/webhook/"


def bot_json(bot: TelegramBot) -> dict[str, Any]:
    """A bot as shown: never its token (its last four characters only) nor its secret."""
    return {
        "id": bot.id,
        "agent_id": bot.agent_id,
        "mode": bot.mode,
        "username": bot.username,
        "token": f"...{bot.token[-4:]}",
        "webhook_path": WEBHOOK_PREFIX + bot.id,
        "created_at": iso(bot.created_at),
    }


@router.post("/telegram/bots")
def create_bot(req: Annotated[TelegramBotCreate, Body()]) -> Response[Any]:
    return http.json_reply(200, bot_json(telegram.create(http.rt(), http.org_id(), req)))


@router.get("/telegram/bots")
def list_bots() -> Response[Any]:
    return http.json_reply(200, [bot_json(b) for b in telegram.list_bots(http.rt(), http.org_id())])


@router.get("/telegram/bots/<bot_id>")
def retrieve_bot(bot_id: str) -> Response[Any]:
    return http.json_reply(200, bot_json(telegram.retrieve(http.rt(), http.org_id(), bot_id)))


@router.delete("/telegram/bots/<bot_id>")
def delete_bot(bot_id: str) -> Response[Any]:
    telegram.delete(http.rt(), http.org_id(), bot_id)
    return Response(status_code=204, body="")


@router.post("/telegram/webhook/<bot_id>")
def webhook(bot_id: str, update: Annotated[dict[str, Any], Body()]) -> Response[Any]:
    secret = http.header(telegram.SECRET_HEADER)
    done = telegram.receive(http.rt(), bot_id, secret, update)
    return http.json_reply(200, {"ok": True, "done": done})
