"""A model call's address and its credential come from one place (llm.endpoints.target).

A hostile organization registers a provider of one type at a host it controls (the capture
server here) and names it in an agent whose `model_endpoint_type` is another: the call
would once go to the provider's URL with the server's key of the other type. Every ordered
pair of the four provider types Cairn calls and one keyless type: refused at create,
update and import (400 naming the fields, nothing written), and an agent stored so earlier
fails its run on both send paths (Letta's messages and the OpenAI door) with no request.
The capture server must never see a server key; the server's own model, nothing either.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cairn.domain import Agent
from cairn.domain.configs import LLMConfig
from cairn.store import agents as agent_rows
from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.api.test_outbound import Capture

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "letta-0.16.1"
SERVER_KEYS = ("sk-test", "ant-test", "gm-server-key", "AKIASERVERROLE0000000")
TYPES = ["openai", "anthropic", "google_ai", "bedrock", "ollama"]
PAIRS = [(own, named) for own in TYPES for named in TYPES if own != named]
SEND = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def keyed(db: Database, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    """A server holding a key for every provider (the AWS role's id included), loopback
    opened to organizations' URLs so that the capture server is reachable as a tenant's."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", SERVER_KEYS[3])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "server-role-secret")
    with make_stack(db, gemini_api_key="gm-server-key") as made:
        yield made


@pytest.fixture
def capture() -> Iterator[Capture]:
    made = Capture()
    yield made
    made.close()


def call(stack: Stack, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {stack.key}"}
    return httpx.request(method, f"{stack.url}/v1{path}", headers=headers, timeout=60, **kwargs)


def provider(stack: Stack, kind: str, url: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": f"mine-{kind}",
        "provider_type": kind,
        "api_key": "own-key-0001",
        "base_url": url,
    }
    if kind == "bedrock":
        body |= {"access_key": "AKIAOWNKEY", "region": "us-east-1"}
    made = call(stack, "POST", "/providers/", json=body)
    assert made.status_code == 200, made.text
    return made.json()


def config(named: str, own: str, url: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "model_endpoint_type": named,
        "model_endpoint": url,
        "provider_name": f"mine-{own}",
        "provider_category": "byok",
        "context_window": 32000,
        **extra,
    }


def assert_nothing_reached(stack: Stack, capture: Capture, before: int) -> None:
    seen = json.dumps([headers for _, _, headers in capture.seen])
    assert not any(key in seen for key in SERVER_KEYS), seen
    assert capture.seen == [] and len(stack.fake.requests) == before


@pytest.mark.parametrize(("own", "named"), PAIRS)
def test_a_provider_named_under_another_endpoint_type_is_refused_everywhere(
    keyed: Stack, capture: Capture, own: str, named: str
) -> None:
    provider(keyed, own, capture.url)
    bad = config(named, own, capture.url)
    before = len(keyed.fake.requests)
    made = call(keyed, "POST", "/agents/", json={"name": "mallory", "llm_config": bad})
    assert made.status_code == 400, made.text
    assert "llm_config.model_endpoint_type, llm_config.provider_name" in made.text
    assert call(keyed, "GET", "/agents/").json() == []
    # Update: an agent of the server's provider moved onto the organization's provider.
    good = call(keyed, "POST", "/agents/", json={"name": "a", "model": "openai/gpt-test"}).json()
    moved = call(keyed, "PATCH", f"/agents/{good['id']}", json={"llm_config": bad})
    assert moved.status_code == 400 and "llm_config.model_endpoint_type" in moved.text
    kept = call(keyed, "GET", f"/agents/{good['id']}").json()["llm_config"]
    assert kept["provider_category"] != "byok" and kept["model_endpoint"] != capture.url
    # Import: an agent file carrying the disagreeing config.
    file = json.loads((FIXTURES / "agent-A.af").read_text())
    file["agents"][0]["llm_config"] = bad
    sent = call(keyed, "POST", "/agents/import", files={"file": ("a.af", json.dumps(file))})
    assert sent.status_code == 400 and "llm_config.model_endpoint_type" in sent.text, sent.text
    assert [a["id"] for a in call(keyed, "GET", "/agents/").json()] == [good["id"]]
    assert_nothing_reached(keyed, capture, before)


@pytest.mark.parametrize(("own", "named"), PAIRS)
def test_an_agent_stored_so_earlier_fails_its_runs_without_a_request(
    keyed: Stack, capture: Capture, own: str, named: str
) -> None:
    provider(keyed, own, capture.url)
    good = call(keyed, "POST", "/agents/", json={"name": "a", "model": "openai/gpt-test"}).json()
    with keyed.runtime.db.transaction() as conn:  # as an older Cairn stored it
        agent = agent_rows.get(conn, keyed.org_id, good["id"])
        assert isinstance(agent, Agent)
        bad = LLMConfig.model_validate(config(named, own, capture.url))
        agent_rows.update(
            conn, agent.model_copy(update={"llm_config": bad}), expected_version=agent.version
        )
    before = len(keyed.fake.requests)
    letta = call(keyed, "POST", f"/agents/{good['id']}/messages", json=SEND)
    door = call(keyed, "POST", "/chat/completions", json={"model": good["id"], **SEND})
    assert door.status_code >= 400 and "model_endpoint_type" in door.text, door.text
    runs = call(keyed, "GET", "/runs/", params={"agent_id": good["id"]}).json()
    assert [r["status"] for r in runs] == ["failed", "failed"], (letta.text, runs)
    assert all("llm_config.model_endpoint_type" in json.dumps(r) for r in runs)
    assert_nothing_reached(keyed, capture, before)


def test_every_other_disagreement_is_refused_naming_its_field(
    keyed: Stack, capture: Capture
) -> None:
    provider(keyed, "openai", capture.url + "/v1")
    cases = {
        # The provider's own type, but another endpoint than its base_url.
        "llm_config.model_endpoint": config("openai", "openai", "https://api.example.com/v1"),
        # A provider the organization does not have.
        "llm_config.provider_name": config("openai", "gone", capture.url + "/v1"),
        # The organization's provider under the server's category.
        "llm_config.provider_category, llm_config.provider_name": config(
            "openai", "openai", capture.url + "/v1", provider_category="base"
        ),
        "llm_config.provider_category": config(
            "openai", "openai", capture.url + "/v1", provider_category="premium"
        ),
    }
    for field, bad in cases.items():
        made = call(keyed, "POST", "/agents/", json={"name": "m", "llm_config": bad})
        assert made.status_code == 400 and made.json()["detail"].startswith(f"{field}:"), (
            field,
            made.text,
        )
    assert call(keyed, "GET", "/agents/").json() == []
    assert capture.seen == []


@pytest.mark.parametrize("own", ["openai", "anthropic", "google_ai"])
def test_an_agreeing_provider_carries_its_own_key_only(
    keyed: Stack, capture: Capture, own: str
) -> None:
    """The same provider named under its own type: its key reaches its URL, no server key
    with it (the capture server answers nothing a model would, so the run fails after)."""
    provider(keyed, own, capture.url)
    made = call(
        keyed, "POST", "/agents/", json={"name": "o", "llm_config": config(own, own, capture.url)}
    )
    assert made.status_code == 200, made.text
    call(keyed, "POST", f"/agents/{made.json()['id']}/messages", json=SEND)
    seen = json.dumps([headers for _, _, headers in capture.seen])
    assert capture.seen and "own-key-0001" in seen
    assert not any(key in seen for key in SERVER_KEYS), seen
