"""Images in user messages through the API: base64 kept as sent, a URL fetched once under
the outbound-address policy and kept as base64, what is not an image (or too big, or out of
reach, or a local file) refused with a 400 naming it, and the model given the image."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from cairn.services.images import MAX_IMAGE_BYTES
from tests.api.conftest import Stack
from tests.fakes.llm_server import Reply
from tests.integration.test_images import PNG

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
SERVED = {
    "/pixel.png": ("image/png", PNG),
    "/page": ("text/html", b"<p>no</p>"),
    "/huge.png": ("image/png", b"\x89PNG" + b"\x00" * (MAX_IMAGE_BYTES + 10)),
    # An HTML page served as an image; a picture served with no useful type.
    "/fake.png": ("image/png", b"<html><body>not a picture</body></html>"),
    "/untyped": ("image/jpeg", PNG),
    "/big.png": ("image/png", PNG + bytes(2 * 1024 * 1024)),
}


@pytest.fixture
def site() -> Iterator[str]:
    class Serve(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            kind, body = SERVED.get(self.path, ("text/plain", b""))
            self.send_response(200 if self.path in SERVED else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Serve)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def picture(source: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": source},
            ],
        }
    ]


def sent_image(stack: Stack) -> bytes:
    parts = stack.fake.requests[-1].body["messages"][-1]["content"]
    url = next(p for p in parts if p["type"] == "image_url")["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    return base64.b64decode(url.split(",", 1)[1])


def test_a_base64_image_reaches_the_model_and_is_listed_as_letta_lists_it(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("A single pixel.")
    data = base64.b64encode(PNG).decode()
    response = client.agents.messages.create(
        agent.id,
        messages=picture(  # type: ignore[arg-type]
            {"type": "base64", "media_type": "image/png", "data": data}
        ),
    )
    assert response.messages[-1].content == "A single pixel."
    assert sent_image(stack) == PNG
    (said,) = [
        m
        for m in client.agents.messages.list(agent.id)
        if m.message_type == "user_message" and isinstance(m.content, list)
    ]
    kinds = [part.type for part in said.content]  # type: ignore[union-attr]
    assert kinds == ["text", "image"] and said.content[1].source.data == data  # type: ignore[union-attr, index]


def test_an_image_url_is_fetched_once_and_kept(stack: Stack, site: str) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("A pixel from the web.")
    client.agents.messages.create(
        agent.id,
        messages=picture(  # type: ignore[arg-type]
            {"type": "url", "url": f"{site}/pixel.png"}
        ),
    )
    assert sent_image(stack) == PNG
    stack.fake.reply("Still the pixel.")  # the next turn sends the same bytes from the store
    client.agents.messages.create(agent.id, input="and again?")
    earlier = [
        p
        for m in stack.fake.requests[-1].body["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
    ]
    url = next(p for p in earlier if p["type"] == "image_url")["image_url"]["url"]
    assert base64.b64decode(url.split(",")[1]) == PNG


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ({"type": "url", "url": "{site}/page"}, "text/html is not taken"),
        ({"type": "url", "url": "{site}/huge.png"}, f"limit of {MAX_IMAGE_BYTES} bytes"),
        ({"type": "url", "url": "{site}/missing.png"}, "answered 404"),
        ({"type": "url", "url": "http://169.254.169.254/latest/meta-data/"}, "public addresses"),
        ({"type": "url", "url": "file:///etc/passwd"}, "not an http(s) URL"),
        ({"type": "base64", "media_type": "image/png", "data": "%%%"}, "not base64"),
        ({"type": "base64", "media_type": "image/tiff", "data": "AAAA"}, "image/tiff"),
        ({"type": "letta", "file_id": "file-1"}, "base64 or url"),
        ({"type": "url", "url": "{site}/fake.png"}, "not a png, jpeg, gif or webp image"),
        (
            {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(b"GIF8-not-quite").decode(),
            },
            "not a png, jpeg",
        ),
    ],
)
def test_what_is_not_a_reachable_image_is_a_400_naming_it(
    stack: Stack, site: str, source: dict[str, str], says: str
) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    filled = {k: v.replace("{site}", site) for k, v in source.items()}
    answer = httpx.post(
        f"{stack.url}/v1/agents/{agent.id}/messages",
        headers={"Authorization": f"Bearer {stack.key}"},
        json={"messages": picture(filled)},
        timeout=30,
    )
    assert answer.status_code == 400 and says in answer.text, answer.text
    assert stack.fake.requests == []  # no model call, no run
    assert list(client.runs.list(agent_ids=[agent.id])) == []


def test_a_model_without_vision_gets_each_image_described_once(db: Any) -> None:
    """The operator says `gpt-text` has no vision: the vision model describes the image
    (once: the next turn reuses it), and the agent's model reads the description."""
    from tests.api.conftest import make_stack

    with make_stack(db, text_only_models="gpt-text", vision_model="openai/gpt-vision") as stack:
        client = stack.client()
        agent = client.agents.create(llm_config={**LLM, "model": "gpt-text"})  # type: ignore[arg-type]
        stack.fake.reply("A red pixel on white.")  # the vision model
        stack.fake.reply("It is a pixel.")  # the agent's
        data = base64.b64encode(PNG).decode()
        client.agents.messages.create(
            agent.id,
            messages=picture(  # type: ignore[arg-type]
                {"type": "base64", "media_type": "image/png", "data": data}
            ),
        )
        vision, agent_call = stack.fake.requests
        assert vision.body["model"] == "gpt-vision" and "image_url" in str(vision.body)
        assert agent_call.body["model"] == "gpt-text"
        assert not any(isinstance(m["content"], list) for m in agent_call.body["messages"])
        assert "[Image: A red pixel on white.]" in str(agent_call.body["messages"])
        stack.fake.reply("Still a pixel.")
        client.agents.messages.create(agent.id, input="and now?")
        assert [r.body["model"] for r in stack.fake.requests] == [
            "gpt-vision",
            "gpt-text",
            "gpt-text",
        ]
        assert "[Image: A red pixel on white.]" in str(stack.fake.requests[-1].body["messages"])
        # The message keeps its image: a vision model given this agent would see it.
        said = [
            m
            for m in client.agents.messages.list(agent.id)
            if m.message_type == "user_message" and isinstance(m.content, list)
        ]
        assert said and said[0].content[1].type == "image"  # type: ignore[union-attr, index]


def test_without_a_vision_model_the_image_is_named_not_sent(db: Any) -> None:
    from tests.api.conftest import make_stack

    with make_stack(db, text_only_models="gpt-text") as stack:
        client = stack.client()
        agent = client.agents.create(llm_config={**LLM, "model": "gpt-text"})  # type: ignore[arg-type]
        stack.fake.reply("I cannot see it.")
        data = base64.b64encode(PNG).decode()
        client.agents.messages.create(
            agent.id,
            messages=picture(  # type: ignore[arg-type]
                {"type": "base64", "media_type": "image/png", "data": data}
            ),
        )
        (only,) = stack.fake.requests
        sent = only.body["messages"]
        assert not any(isinstance(m["content"], list) for m in sent)  # text only, no image part
        assert "[Image: not described" in sent[-1]["content"]


def test_an_image_survives_compaction_as_its_description(db: Any) -> None:
    """The summary of a context holding an image is asked of a transcript where the image
    is what the vision model said it shows (Letta's summary would drop it)."""
    from tests.api.conftest import make_stack

    with make_stack(db, vision_model="openai/gpt-vision") as stack:
        client = stack.client()
        agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
        stack.fake.reply("Seen.")  # a vision model: the agent's own gets the image
        data = base64.b64encode(PNG).decode()
        client.agents.messages.create(
            agent.id,
            messages=picture(  # type: ignore[arg-type]
                {"type": "base64", "media_type": "image/png", "data": data}
            ),
        )
        for n in range(3):
            stack.fake.reply(f"answer {n}")
            client.agents.messages.create(agent.id, input=f"question {n}")
        stack.fake.reply("A map of the northern trail.")  # the vision model, for the summary
        stack.fake.reply("Ada showed a map of the northern trail.")  # the summariser
        done = httpx.post(
            f"{stack.url}/v1/agents/{agent.id}/summarize",
            timeout=30,
            headers={"Authorization": f"Bearer {stack.key}"},
        )
        assert done.status_code == 204, done.text
        vision, summariser = stack.fake.requests[-2:]
        assert vision.body["model"] == "gpt-vision"
        assert "[Image: A map of the northern trail.]" in summariser.last_text()


def sent_parts(stack: Stack) -> list[Any]:
    return [
        p["text"] if p["type"] == "text" else p["image_url"]["url"][:22]
        for p in stack.fake.requests[-1].body["messages"][-1]["content"]
    ]


def test_parts_keep_their_order_and_an_images_type_is_what_its_bytes_say(
    stack: Stack, site: str
) -> None:
    """`[image, "REPLY after", image, "tail"]` once reached the model as "REPLY aftertail"
    ahead of both images; a picture served as image/jpeg is a png, and is sent as one."""
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("Two pictures.")
    data = base64.b64encode(PNG).decode()
    client.agents.messages.create(
        agent.id,
        messages=[
            {
                "role": "user",
                "content": [  # type: ignore[arg-type]
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": data},
                    },
                    {"type": "text", "text": "REPLY after"},
                    {"type": "image", "source": {"type": "url", "url": f"{site}/untyped"}},
                    {"type": "text", "text": "tail"},
                ],
            }
        ],
    )
    png = "data:image/png;base64,"
    assert sent_parts(stack) == [png, "REPLY after", png, "tail"]
    said = next(
        m for m in client.agents.messages.list(agent.id) if m.message_type == "user_message"
    )
    assert [p.type for p in said.content] == ["image", "text", "image", "text"]  # type: ignore[union-attr]
    assert said.content[2].source.media_type == "image/png"  # type: ignore[union-attr, index]


def test_a_message_has_at_most_ten_images_and_3_5_mib_of_them(stack: Stack, site: str) -> None:
    """Twelve images of 4 MiB made a 67 MB model request: the count is refused before any
    is fetched, the total as soon as it passes; nothing is stored or run."""
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]

    def send(*paths: str) -> httpx.Response:
        parts = [{"type": "image", "source": {"type": "url", "url": f"{site}{p}"}} for p in paths]
        return httpx.post(
            f"{stack.url}/v1/agents/{agent.id}/messages",
            headers={"Authorization": f"Bearer {stack.key}"},
            timeout=60,
            json={"messages": [{"role": "user", "content": parts}]},
        )

    many = send(*["/pixel.png"] * 11)
    assert many.status_code == 400 and "11 images, over the limit of 10" in many.text
    heavy = send("/big.png", "/big.png")
    assert heavy.status_code == 400 and "the message's images come to over" in heavy.text
    assert stack.fake.requests == [] and list(client.runs.list(agent_ids=[agent.id])) == []
    stack.fake.reply("One big picture.")
    assert send("/big.png", *["/pixel.png"] * 9).status_code == 200


def test_an_image_counts_in_the_context_estimate() -> None:
    """So that compaction can evict an image as it evicts text (its base64 once counted
    for nothing: 346 tokens for twelve images)."""
    from cairn.domain.ids import new_id
    from cairn.domain.messages import ImageContent, Message, TextContent
    from cairn.run.steps.prompt import IMAGE_TOKENS, estimate_tokens

    org, agent = new_id("org"), new_id("agent")
    text = Message(
        organization_id=org, agent_id=agent, role="user", content=[TextContent(text="x" * 400)]
    )
    pictured = text.model_copy(
        update={
            "content": [
                *text.content,
                *[
                    ImageContent(
                        source={"type": "base64", "media_type": "image/png", "data": "AAAA"}
                    )
                ]
                * 3,
            ]
        }
    )
    assert estimate_tokens([pictured]) - estimate_tokens([text]) == 3 * IMAGE_TOKENS


def test_a_page_of_messages_with_images_stays_within_lambdas_response_and_pages_on(
    stack: Stack,
) -> None:
    """Three messages of 3 MiB of image each: a page of them would be 12 MB, past Lambda's
    6 MB; the page is cut at 5 MB and the cursor goes on to the rest, both ways."""
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    big = base64.b64encode(PNG + bytes(3 * 1024 * 1024)).decode()
    # The fake counts the base64 as tokens (a provider counts an image as ~1,600): a later
    # turn compacts first, so every call of it, turn or summary, gets an answer.
    stack.fake.when(lambda r: True, lambda r: Reply(text="Seen."))
    for n in range(3):
        sent = httpx.post(
            f"{stack.url}/v1/agents/{agent.id}/messages",
            timeout=60,
            headers={"Authorization": f"Bearer {stack.key}"},
            json={
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": f"picture {n}"},
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": big,
                                },
                            },
                        ],
                    }
                ]
            },
        )
        assert sent.status_code == 200, sent.text[:300]
    http = httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=60
    )

    def pictured(page: list[dict[str, Any]]) -> list[str]:
        said = [m["content"] for m in page if m["message_type"] == "user_message"]
        texts = [c if isinstance(c, str) else c[0].get("text", "") for c in said]
        return [t for t in texts if t.startswith("picture ")]

    for order, cursor, ends in (("asc", "after", -1), ("desc", "before", 0)):
        seen: list[str] = []
        params: dict[str, Any] = {"limit": 50, "order": order}
        while True:
            page = http.get(f"/v1/agents/{agent.id}/messages", params=params)
            assert page.status_code == 200 and len(page.content) < 6_000_000, len(page.content)
            items = page.json()
            if not items:
                break
            seen += pictured(items)
            params[cursor] = items[ends]["id"]
        assert sorted(seen) == ["picture 0", "picture 1", "picture 2"], (order, seen)
