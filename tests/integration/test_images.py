"""A user's image reaches each provider in its own wire form (through its real SDK to the
fake server): OpenAI's data-URL image part, Anthropic's and Bedrock's image blocks,
Gemini's inline data; the same bytes every time, and the text beside it."""

from __future__ import annotations

import base64
import json
from typing import Any

from cairn.domain import Organization
from cairn.domain.messages import ImageContent, Message, TextContent
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM
from tests.integration.engine_harness import send
from tests.integration.test_provider_matrix import agent_on, engine, spoke
from tests.integration.test_provider_matrix import fake as fake
from tests.integration.test_provider_matrix import provider as provider

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def image_of(request_body: dict[str, Any], provider: str) -> tuple[str, bytes, str]:
    """(media type, bytes, the text beside it) of the last user turn's image."""
    if provider == "openai":
        parts = request_body["messages"][-1]["content"]
        url = next(p for p in parts if p["type"] == "image_url")["image_url"]["url"]
        head, data = url.split(",", 1)
        text = next(p["text"] for p in parts if p["type"] == "text")
        return head.removeprefix("data:").removesuffix(";base64"), base64.b64decode(data), text
    if provider == "anthropic":
        parts = request_body["messages"][-1]["content"]
        source = next(p for p in parts if p["type"] == "image")["source"]
        text = next(p["text"] for p in parts if p["type"] == "text")
        return source["media_type"], base64.b64decode(source["data"]), text
    if provider == "bedrock":
        parts = request_body["messages"][-1]["content"]
        image = next(p for p in parts if "image" in p)["image"]
        text = next(p["text"] for p in parts if "text" in p)
        return f"image/{image['format']}", base64.b64decode(image["source"]["bytes"]), text
    parts = request_body["contents"][-1]["parts"]  # gemini
    blob = next(p for p in parts if "inlineData" in p)["inlineData"]
    text = next(p["text"] for p in parts if "text" in p)
    # The SDK writes the Blob's field as named (proto3 JSON takes either spelling).
    # ... and its bytes in URL-safe base64.
    data = base64.urlsafe_b64decode(blob["data"])
    return blob.get("mimeType") or blob["mime_type"], data, text


def test_an_image_reaches_each_provider_in_its_own_form(
    db: Database, org: Organization, fake: FakeLLM, provider: str
) -> None:
    agent = agent_on(db, org, fake, provider)
    fake.reply("A single pixel.")
    picture = Message(
        organization_id=agent.organization_id,
        agent_id=agent.id,
        role="user",
        content=[
            TextContent(text="What is this?"),
            ImageContent(
                source={
                    "type": "base64",
                    "media_type": "image/png",
                    "data": base64.b64encode(PNG).decode(),
                }
            ),
        ],
    )
    turn = send(engine(db, fake), agent, picture)
    assert turn.run.status == "completed" and turn.new[-1].text == "A single pixel."
    media, body, text = image_of(fake.requests[-1].body, provider)
    assert (media, body) == ("image/png", PNG) and "What is this?" in text
    spoke(fake, provider)
    stored = json.dumps(turn.new[0].model_dump(mode="json"))
    assert base64.b64encode(PNG).decode() in stored  # kept with the message
