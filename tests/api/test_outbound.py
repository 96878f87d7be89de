"""A hostile tenant's URLs: the server's keys never go to them, and the server reaches no
address inside its own network for them (cairn.outbound, cairn.llm.endpoints).

A capture server on loopback stands for the tenant's server (or the metadata service): it
records whatever reaches it and must see nothing. The stack here does not open loopback to
organizations' URLs, as a deployment would not.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from cairn.domain import Agent
from cairn.domain.configs import LLMConfig
from cairn.store import agents as agent_rows
from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "letta-0.16.1"


class Capture:
    def __init__(self, host: str = "127.0.0.1", redirect_to: str | None = None) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        capture = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                capture.seen.append((self.command, self.path, dict(self.headers.items())))
                if redirect_to:
                    self.send_response(307)
                    self.send_header("Location", redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = b'{"data": [], "object": "list"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def capture() -> Iterator[Capture]:
    made = Capture()
    yield made
    made.close()


@pytest.fixture
def closed(db: Database) -> Iterator[Stack]:
    """A stack as deployed: no network opened to organizations' URLs."""
    with make_stack(db, outbound_networks="", gemini_api_key="gm-server-key") as made:
        yield made


def call(stack: Stack, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {stack.key}"}
    return httpx.request(method, f"{stack.url}/v1{path}", headers=headers, timeout=60, **kwargs)


def agent_body(endpoint_type: str, endpoint: str, **extra: Any) -> dict[str, Any]:
    llm = {
        "model": "m",
        "model_endpoint_type": endpoint_type,
        "model_endpoint": endpoint,
        "context_window": 32000,
    }
    return {"name": "mallory", "llm_config": llm, **extra}


@pytest.mark.parametrize("kind", ["openai", "anthropic", "google_ai", "bedrock"])
def test_an_agent_naming_another_endpoint_for_the_servers_key_is_refused(
    closed: Stack, capture: Capture, kind: str
) -> None:
    made = call(closed, "POST", "/agents/", json=agent_body(kind, capture.url))
    assert made.status_code == 400, made.text
    assert "llm_config.model_endpoint" in made.text
    assert call(closed, "GET", "/agents/").json() == []
    # Update: an agent of the server's provider moved to the tenant's server.
    good = call(closed, "POST", "/agents/", json={"name": "a", "model": "openai/gpt-test"})
    assert good.status_code == 200, good.text
    moved = {
        **good.json()["llm_config"],
        "model_endpoint_type": kind,
        "model_endpoint": capture.url,
    }
    changed = call(closed, "PATCH", f"/agents/{good.json()['id']}", json={"llm_config": moved})
    assert changed.status_code == 400 and "llm_config.model_endpoint" in changed.text
    kept = call(closed, "GET", f"/agents/{good.json()['id']}").json()
    assert kept["llm_config"]["model_endpoint"] == good.json()["llm_config"]["model_endpoint"]
    assert capture.seen == []


@pytest.mark.parametrize(
    ("kind", "model", "dim"),
    [
        ("openai", "text-embedding-3-small", 1536),
        ("google_ai", "gemini-embedding-001", 3072),
        ("bedrock", "amazon.titan-embed-text-v2:0", 1024),
    ],
)
def test_an_embedding_endpoint_of_the_tenants_is_refused_for_the_servers_key(
    closed: Stack, capture: Capture, kind: str, model: str, dim: int
) -> None:
    embedding = {
        "embedding_model": model,
        "embedding_endpoint_type": kind,
        "embedding_endpoint": capture.url,
        "embedding_dim": dim,
    }
    body = {"name": "e", "model": "openai/gpt-test", "embedding_config": embedding}
    made = call(closed, "POST", "/agents/", json=body)
    assert made.status_code == 400 and "embedding_config.embedding_endpoint" in made.text
    assert call(closed, "GET", "/agents/").json() == []
    assert capture.seen == []


@pytest.mark.parametrize(
    "endpoint",
    ["http://169.254.169.254/latest", "http://127.0.0.1:5432", "file:///etc/passwd", "CAPTURE"],
)
def test_an_archive_or_folder_naming_an_endpoint_it_may_not_reach_is_refused_when_made(
    closed: Stack, capture: Capture, endpoint: str
) -> None:
    """As an agent's config is: it was stored, and failed only at its first use (a 502,
    a file's processing `error`)."""
    embedding = {
        "embedding_model": "text-embedding-3-small",
        "embedding_endpoint_type": "openai",
        "embedding_endpoint": capture.url if endpoint == "CAPTURE" else endpoint,
        "embedding_dim": 1536,
    }
    archive = call(closed, "POST", "/archives/", json={"name": "a", "embedding_config": embedding})
    assert archive.status_code == 400, archive.text
    assert "embedding_config.embedding_endpoint" in archive.text
    assert call(closed, "GET", "/archives/").json() == []
    folder = call(closed, "POST", "/folders/", json={"name": "f", "embedding_config": embedding})
    assert folder.status_code == 400 and "embedding_config.embedding_endpoint" in folder.text
    assert call(closed, "GET", "/folders/").json() == []
    made = call(
        closed,
        "POST",
        "/folders/",
        json={"name": "g", "embedding": "openai/text-embedding-3-small"},
    )
    assert made.status_code == 200, made.text
    moved = call(
        closed, "PATCH", f"/folders/{made.json()['id']}", json={"embedding_config": embedding}
    )
    assert moved.status_code == 400 and "embedding_config.embedding_endpoint" in moved.text
    kept = call(closed, "GET", f"/folders/{made.json()['id']}").json()
    assert (
        kept["embedding_config"]["embedding_endpoint"]
        == made.json()["embedding_config"]["embedding_endpoint"]
    )
    assert capture.seen == []


@pytest.mark.parametrize("kind", ["openai", "anthropic", "google_ai", "bedrock"])
def test_an_imported_agent_file_is_rehomed_to_this_servers_endpoint(
    closed: Stack, capture: Capture, kind: str
) -> None:
    """An agent file carries the endpoints of the server it came from: an agent of a
    provider this server holds a key for is called at this server's endpoint, never the
    file's (nothing reaches the capture server; the fake answers OpenAI's and Anthropic's)."""
    file = json.loads((FIXTURES / "agent-A.af").read_text())
    llm = file["agents"][0]["llm_config"]
    llm.update(model_endpoint_type=kind, model_endpoint=capture.url)
    file["agents"][0]["embedding_config"]["embedding_endpoint"] = capture.url
    sent = call(
        closed, "POST", "/agents/import", files={"file": ("a.af", json.dumps(file).encode())}
    )
    assert sent.status_code == 200, sent.text
    (agent_id,) = sent.json()["agent_ids"]
    agent = call(closed, "GET", f"/agents/{agent_id}").json()
    home = {
        "openai": f"{closed.fake.base_url}/v1",
        "anthropic": closed.fake.base_url,
        "google_ai": "https://generativelanguage.googleapis.com",
        "bedrock": None,
    }
    assert agent["llm_config"]["model_endpoint"] == home[kind]
    assert agent["embedding_config"]["embedding_endpoint"] != capture.url
    if kind in ("openai", "anthropic"):
        closed.fake.reply("Hello from this server.")
        answer = call(
            closed,
            "POST",
            f"/agents/{agent_id}/messages",
            json={"messages": [{"role": "user", "content": "hi"}]},
        )
        assert answer.status_code == 200 and "Hello from this server." in answer.text
    assert capture.seen == []


def test_an_imported_agent_of_a_keyless_server_inside_is_refused_whole(
    closed: Stack, capture: Capture
) -> None:
    file = json.loads((FIXTURES / "agent-A.af").read_text())
    file["agents"][0]["llm_config"].update(model_endpoint_type="ollama", model_endpoint=capture.url)
    sent = call(
        closed, "POST", "/agents/import", files={"file": ("a.af", json.dumps(file).encode())}
    )
    assert sent.status_code == 400 and "llm_config.model_endpoint" in sent.text, sent.text
    assert call(closed, "GET", "/agents/").json() == []
    assert call(closed, "GET", "/blocks/").json() == []
    assert capture.seen == []


def test_an_agent_stored_before_the_rule_sends_nothing_to_its_endpoint(
    closed: Stack, capture: Capture
) -> None:
    good = call(closed, "POST", "/agents/", json={"name": "a", "model": "openai/gpt-test"}).json()
    db = closed.runtime.db
    with db.transaction() as conn:  # as an older Cairn stored it
        agent = agent_rows.get(conn, closed.org_id, good["id"])
        assert isinstance(agent, Agent)
        config = LLMConfig.model_validate(
            {**agent.llm_config.model_dump(), "model_endpoint": capture.url}
        )
        agent_rows.update(
            conn, agent.model_copy(update={"llm_config": config}), expected_version=agent.version
        )
    sent = call(
        closed,
        "POST",
        f"/agents/{good['id']}/messages",
        json={"messages": [{"role": "user", "content": "hi"}]},
    )
    assert sent.status_code in (200, 400, 500, 502), sent.text
    runs = call(closed, "GET", "/runs/", params={"agent_id": good["id"]}).json()
    assert [r["status"] for r in runs] == ["failed"]
    assert capture.seen == []


@pytest.mark.parametrize("where", ["capture", "metadata", "localhost"])
def test_provider_urls_inside_the_servers_network_are_not_fetched(
    closed: Stack, capture: Capture, where: str
) -> None:
    url = {
        "capture": capture.url,
        "metadata": "http://169.254.169.254/latest",
        "localhost": capture.url.replace("127.0.0.1", "localhost"),
    }[where]
    own = {"name": "mine", "provider_type": "openai", "api_key": "sk-own", "base_url": url}
    for method, path in (("POST", "/providers/check"), ("POST", "/providers/")):
        answer = call(closed, method, path, json=own)
        assert answer.status_code == 400 and "base_url" in answer.text, answer.text
        assert "public addresses" in answer.text
    ollama = call(closed, "POST", "/agents/", json=agent_body("ollama", f"{url}/v1"))
    assert ollama.status_code == 400 and "llm_config.model_endpoint" in ollama.text
    assert capture.seen == []


def test_a_redirect_to_an_inside_address_is_not_followed(db: Database) -> None:
    """A tenant's server the operator opened (127.0.0.2) redirects the key check to one it
    did not (127.0.0.1): the connection there is refused, whatever the first answer said."""
    inside = Capture("127.0.0.1")
    hop = Capture("127.0.0.2", redirect_to=inside.url)
    try:
        with make_stack(db, outbound_networks="127.0.0.2/32") as opened:
            own = {"provider_type": "openai", "api_key": "sk-own", "base_url": hop.url + "/v1"}
            answer = call(opened, "POST", "/providers/check", json=own)
            assert answer.status_code >= 400
        assert [p for _, p, _ in hop.seen] == ["/v1/models"]
        assert inside.seen == []
    finally:
        inside.close()
        hop.close()


@pytest.mark.parametrize(
    ("kind", "path", "model"),
    [
        ("openai", "/v1", "gpt-own"),
        ("anthropic", "", "claude-own"),
        ("google_ai", "", "gemini-own"),
    ],
)
def test_an_organizations_own_provider_is_called_through_the_policy_with_its_own_key(
    stack: Stack, kind: str, path: str, model: str
) -> None:
    """Each SDK's guarded client (httpx2 for OpenAI's and Anthropic's, httpx for Google's)
    reaches an address the operator opened, carrying the organization's key only."""
    own = {
        "name": f"mine-{kind}",
        "provider_type": kind,
        "api_key": "own-key-123",
        "base_url": stack.fake.base_url + path,
    }
    made = call(stack, "POST", "/providers/", json=own)
    assert made.status_code == 200, made.text
    agent = call(stack, "POST", "/agents/", json={"name": "o", "model": f"mine-{kind}/{model}"})
    assert agent.status_code == 200, agent.text
    stack.fake.reply("Hello with your own key.")
    sent = call(
        stack,
        "POST",
        f"/agents/{agent.json()['id']}/messages",
        json={"messages": [{"role": "user", "content": "hi"}]},
    )
    assert sent.status_code == 200 and "Hello with your own key." in sent.text, sent.text
    seen = json.dumps(stack.fake.requests[-1].headers)
    assert "own-key-123" in seen and "sk-test" not in seen and "ant-test" not in seen
