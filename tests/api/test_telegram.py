"""A Telegram bot connected to an agent, against a local fake of the Bot API: the webhook
proven by its secret token, replies through sendMessage (cut at Telegram's limit), the
typing indicator while a turn runs, photos as images, groups answered only when the bot is
addressed, one agent per chat or one agent with an identity per user."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from cairn.store.db import Database
from cairn.telegram import replies as telegram_side
from tests.api.conftest import Stack, make_stack
from tests.api.test_agent_messages import stack_other_org_client
from tests.fakes.llm_server import Recorded, Reply
from tests.fakes.telegram_api import (
    BOT_ID,
    BOT_USERNAME,
    TOKEN,
    FakeTelegram,
    group_message,
    private_message,
)
from tests.integration.test_images import PNG
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def stack(db: Database, telegram: FakeTelegram) -> Iterator[Stack]:
    with make_stack(db, telegram_api_url=telegram.base_url) as made:
        yield made


def api(stack: Stack) -> httpx.Client:
    return httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=60
    )


def connect(stack: Stack, mode: str = "agent_per_chat", **agent: Any) -> tuple[str, str]:
    """A template agent and a bot connected to it; returns (agent id, bot id)."""
    http = api(stack)
    body = {
        "llm_config": LLM,
        "memory_blocks": [{"label": "persona", "value": "A trail guide."}],
        **agent,
    }
    agent_id = http.post("/v1/agents/", json=body).json()["id"]
    made = http.post(
        "/v1/telegram/bots",
        json={"agent_id": agent_id, "token": TOKEN, "mode": mode, "webhook_base_url": stack.url},
    )
    assert made.status_code == 200, made.text
    return agent_id, made.json()["id"]


def user_texts(request: Recorded) -> list[str]:
    return [json.dumps(m["content"]) for m in request.body["messages"] if m["role"] == "user"]


def test_connecting_a_bot_sets_its_webhook_and_never_shows_its_token(
    stack: Stack, telegram: FakeTelegram
) -> None:
    http = api(stack)
    agent_id, bot_id = connect(stack)
    assert telegram.webhook["url"] == f"{stack.url}/v1/telegram/webhook/{bot_id}"
    secret = telegram.webhook["secret_token"]
    assert len(secret) >= 32 and telegram.webhook["allowed_updates"] == ["message"]
    shown = http.get(f"/v1/telegram/bots/{bot_id}").json()
    assert shown["username"] == BOT_USERNAME and shown["agent_id"] == agent_id
    assert shown["token"] == "..." + TOKEN[-4:] and TOKEN not in json.dumps(shown)
    assert secret not in json.dumps(http.get("/v1/telegram/bots").json())
    with stack.runtime.db.connection() as conn:  # sealed at rest
        row = conn.execute("SELECT * FROM telegram_bots WHERE id = %s", (bot_id,)).fetchone()
    assert row is not None and TOKEN.encode() not in bytes(row["token_sealed"])
    assert secret not in json.dumps(row, default=str)
    other = stack_other_org_client(stack)  # another organization sees nothing of it
    theirs = httpx.get(
        f"{stack.url}/v1/telegram/bots/{bot_id}",
        headers={"Authorization": f"Bearer {other.api_key}"},
    )
    assert theirs.status_code == 404
    assert http.delete(f"/v1/telegram/bots/{bot_id}").status_code == 204
    assert telegram.webhook == {} and http.get("/v1/telegram/bots").json() == []


def test_a_token_telegram_refuses_is_a_400_and_nothing_is_kept(
    stack: Stack, telegram: FakeTelegram
) -> None:
    http = api(stack)
    agent_id = http.post("/v1/agents/", json={"llm_config": LLM}).json()["id"]
    wrong = "7000000002:AAzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
    made = http.post(
        "/v1/telegram/bots",
        json={"agent_id": agent_id, "token": wrong, "webhook_base_url": stack.url},
    )
    assert made.status_code == 400 and "token" in made.text and "Unauthorized" in made.text
    telegram.failures["setWebhook"] = [
        (400, "Bad Request: bad webhook: HTTPS url must be provided for webhook")
    ]
    refused = http.post(
        "/v1/telegram/bots",
        json={"agent_id": agent_id, "token": TOKEN, "webhook_base_url": stack.url},
    )
    assert refused.status_code == 400 and "HTTPS url" in refused.text
    malformed = http.post(
        "/v1/telegram/bots",
        json={"agent_id": agent_id, "token": "nope", "webhook_base_url": stack.url},
    )
    assert malformed.status_code == 422 and "token" in malformed.text
    no_url = http.post("/v1/telegram/bots", json={"agent_id": agent_id, "token": TOKEN})
    assert no_url.status_code == 400 and "webhook_base_url" in no_url.text
    assert http.get("/v1/telegram/bots").json() == []


def test_a_private_chat_gets_its_own_agent_and_a_long_reply_in_parts(
    stack: Stack, telegram: FakeTelegram
) -> None:
    template_id, _ = connect(stack)
    long_reply = " ".join(f"word{n}" for n in range(900))  # 7,089 characters: two parts
    stack.fake.reply(long_reply)
    answer = telegram.deliver(private_message("Which trail today?", message_id=7))
    assert answer.status_code == 200 and answer.json()["done"].startswith("started")
    eventually(lambda: len(telegram.sent()) == 2)
    first, second = telegram.sent()
    assert all(len(p["text"]) <= 4096 for p in (first, second))
    assert f"{first['text']} {second['text']}" == long_reply  # cut at a space, nothing lost
    assert first["reply_parameters"]["message_id"] == 7 and "reply_parameters" not in second
    assert telegram.sent("sendChatAction")[0] == {"chat_id": 42, "action": "typing"}
    [request] = stack.fake.requests
    assert "Which trail today?" in user_texts(request)[-1]
    # The chat's own agent, made from the template: its blocks, not its history.
    http = api(stack)
    agents = http.get("/v1/agents/", params={"tags": "telegram"}).json()
    assert len(agents) == 1 and agents[0]["id"] != template_id
    persona = http.get(f"/v1/agents/{agents[0]['id']}/core-memory/blocks/persona").json()
    assert persona["value"] == "A trail guide."
    stack.fake.reply("Again here.")
    telegram.deliver(private_message("And tomorrow?", message_id=8))
    eventually(lambda: len(telegram.sent()) == 3)
    assert len(http.get("/v1/agents/", params={"tags": "telegram"}).json()) == 1  # the same


def test_the_webhook_takes_only_telegrams_secret_and_each_update_once(
    stack: Stack, telegram: FakeTelegram
) -> None:
    connect(stack)
    stack.fake.when(lambda r: True, Reply(text="once"))
    refused = telegram.deliver(private_message("hi"), secret="guess")
    assert refused.status_code == 401
    unsigned = httpx.post(str(telegram.webhook["url"]), json={"update_id": 1, "message": {}})
    assert unsigned.status_code == 401
    assert stack.fake.requests == []
    first = telegram.deliver(private_message("hi"), update_id=500)
    again = telegram.deliver(private_message("hi"), update_id=500)  # Telegram's retry
    assert first.json()["done"].startswith("started") and again.json()["done"] == "already taken"
    eventually(lambda: len(telegram.sent()) == 1)
    assert len(stack.fake.requests) == 1


def test_in_a_group_the_bot_answers_only_when_addressed(
    stack: Stack, telegram: FakeTelegram
) -> None:
    connect(stack)
    stack.fake.when(lambda r: True, lambda r: Reply(text="On it."))
    chatter = telegram.deliver(group_message("anyone seen the map?"))
    assert chatter.json()["done"] == "ignored: not addressed to the bot"
    handle = f"@{BOT_USERNAME}"
    mention = group_message(
        f"{handle} where is the map?",
        user_id=43,
        first_name="Bo",
        entities=[{"type": "mention", "offset": 0, "length": len(handle)}],
    )
    assert telegram.deliver(mention).json()["done"].startswith("started")
    eventually(lambda: len(telegram.sent()) == 1)
    reply_to_bot = group_message(
        "and the compass?",
        message_id=9,
        reply_to_message={
            "message_id": 3,
            "from": {"id": BOT_ID, "is_bot": True},
            "text": "On it.",
        },
    )
    assert telegram.deliver(reply_to_bot).json()["done"].startswith("started")
    eventually(lambda: len(telegram.sent()) == 2)
    assert len(stack.fake.requests) == 2
    # The group's speaker is named to the agent.
    assert "[Bo] @cairn_test_bot where is the map?" in user_texts(stack.fake.requests[0])[-1]


def test_a_photo_reaches_the_model_as_an_image(stack: Stack, telegram: FakeTelegram) -> None:
    connect(stack)
    telegram.files["photo-big"] = PNG
    stack.fake.reply("A fine ridge.")
    photo = private_message(
        "",
        photo=[
            {"file_id": "photo-small", "width": 90, "height": 60, "file_size": 10},
            {"file_id": "photo-big", "width": 1280, "height": 853, "file_size": len(PNG)},
        ],
        caption="Our view",
    )
    photo.pop("text")
    assert telegram.deliver(photo).json()["done"].startswith("started")
    eventually(lambda: len(telegram.sent()) == 1)
    [request] = stack.fake.requests
    content = request.body["messages"][-1]["content"]
    images = [p for p in content if p.get("type") == "image_url"]
    assert len(images) == 1 and any("Our view" in json.dumps(p) for p in content)
    assert base64.b64decode(images[0]["image_url"]["url"].split(",")[1]) == PNG
    assert [c.body["file_id"] for c in telegram.calls if c.method == "getFile"] == ["photo-big"]


def test_a_photo_too_large_to_read_is_said_not_dropped(
    stack: Stack, telegram: FakeTelegram
) -> None:
    """Every size of a photo over the image limit (or a download bigger than it said), or a
    sticker whose bytes are no image: once dropped without a word. The agent reads that an
    image was too large; the chat is told what could not be read."""
    from cairn.services.images import MAX_IMAGE_BYTES

    connect(stack)
    stack.fake.reply("Could you send a smaller one?")
    huge = {"file_id": "huge", "width": 9000, "height": 6000, "file_size": MAX_IMAGE_BYTES + 1}
    big = private_message("", photo=[huge])
    big.pop("text")
    assert telegram.deliver(big).json()["done"].startswith("started")
    eventually(lambda: len(telegram.sent()) == 1)
    assert "too large to read" in user_texts(stack.fake.requests[0])[-1]
    assert [c for c in telegram.calls if c.method == "getFile"] == []
    telegram.files["sticker-1"] = b"<html>not a picture</html>"
    sticker = private_message(
        "", sticker={"file_id": "sticker-1", "is_animated": False, "is_video": False}
    )
    sticker.pop("text")
    sticker["message_id"] += 1
    answer = telegram.deliver(sticker, update_id=99)
    assert answer.status_code == 200 and answer.json()["done"].startswith("refused"), answer.text
    assert "I could not read that" in telegram.sent()[-1]["text"]
    assert len(stack.fake.requests) == 1  # no turn for it


def test_one_agent_with_an_identity_per_user(stack: Stack, telegram: FakeTelegram) -> None:
    agent_id, _ = connect(stack, mode="identity_per_user")
    stack.fake.when(lambda r: True, lambda r: Reply(text="Hello."))
    telegram.deliver(private_message("hi", user_id=42, first_name="Ada"))
    telegram.deliver(private_message("hey", user_id=43, first_name="Bo"))
    eventually(lambda: len(telegram.sent()) == 2)
    assert {m["chat_id"] for m in telegram.sent()} == {42, 43}  # each chat its own reply
    http = api(stack)
    identities = http.get("/v1/identities/").json()
    assert sorted(i["name"] for i in identities) == ["Ada", "Bo"]
    assert all(agent_id in i["agent_ids"] for i in identities)
    listed = http.get(f"/v1/agents/{agent_id}/messages", params={"limit": 100}).json()
    senders = {m.get("sender_id") for m in listed if m["message_type"] == "user_message"}
    assert senders == {i["id"] for i in identities}
    assert http.get("/v1/agents/", params={"tags": "telegram"}).json() == []  # no new agents


def test_the_chat_sees_the_bot_typing_while_a_step_runs(
    stack: Stack, telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(telegram_side, "TYPING_EVERY_SECONDS", 0.1)
    connect(stack)
    stack.fake.reply("Thought about it.", delay=1.0)
    telegram.deliver(private_message("think hard"))
    eventually(lambda: len(telegram.sent()) == 1)
    typing = telegram.sent("sendChatAction")
    assert len(typing) >= 4, typing  # the webhook's, then renewed while the model thinks
    last_typing = max(i for i, c in enumerate(telegram.calls) if c.method == "sendChatAction")
    reply_at = next(i for i, c in enumerate(telegram.calls) if c.method == "sendMessage")
    assert last_typing < reply_at  # not after the reply: the indicator stopped with the step
