"""Input limits: each answered with a 4xx naming the limit, never a hang (docs/api.md, "Limits")."""

from __future__ import annotations

import httpx

from cairn.domain.constants import (
    MAX_CAPTURE_MESSAGES,
    MAX_MESSAGE_CHARS,
    MAX_PASSAGE_CHARS,
    MAX_REQUEST_BYTES,
)
from tests.api.conftest import Stack

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 10_000_000}


def _agent(stack: Stack) -> tuple[str, dict[str, str]]:
    auth = {"Authorization": f"Bearer {stack.key}"}
    made = httpx.post(f"{stack.url}/v1/agents/", json={"llm_config": LLM}, headers=auth, timeout=30)
    return made.json()["id"], auth


def test_each_limit_is_a_4xx_naming_it_and_stores_nothing(stack: Stack) -> None:
    agent, auth = _agent(stack)
    url = f"{stack.url}/v1/agents/{agent}"
    too_long = httpx.post(
        f"{url}/messages", json={"input": "x" * (MAX_MESSAGE_CHARS + 1)}, headers=auth, timeout=30
    )
    assert too_long.status_code == 422 and str(MAX_MESSAGE_CHARS) in too_long.text
    passage = httpx.post(
        f"{url}/archival-memory", json={"text": "p" * (MAX_PASSAGE_CHARS + 1)}, headers=auth
    )
    assert passage.status_code == 422 and str(MAX_PASSAGE_CHARS) in passage.text
    many = [{"role": "user", "content": "hi"}] * (MAX_CAPTURE_MESSAGES + 1)
    capture = httpx.post(f"{url}/messages/capture", json={"messages": many}, headers=auth)
    assert capture.status_code == 422 and str(MAX_CAPTURE_MESSAGES) in capture.text
    huge = httpx.post(
        f"{url}/messages",
        content=b'{"input": "' + b"y" * MAX_REQUEST_BYTES + b'"}',
        headers={**auth, "content-type": "application/json"},
        timeout=30,
    )
    assert huge.status_code == 413 and str(MAX_REQUEST_BYTES) in huge.json()["detail"]
    history = httpx.get(f"{url}/messages", headers=auth).json()
    assert all(m["message_type"] == "system_message" for m in history) or history == []
    assert httpx.get(f"{url}/archival-memory", headers=auth).json() == []
    assert httpx.get(f"{stack.url}/v1/runs/?agent_id={agent}", headers=auth).json() == []


def test_a_megabyte_in_and_a_megabyte_out_completes(stack: Stack) -> None:
    agent, auth = _agent(stack)
    asked, answer = "q" * 1_500_000, "a" * 1_500_000
    stack.fake.reply(answer)
    sent = httpx.post(
        f"{stack.url}/v1/agents/{agent}/messages", json={"input": asked}, headers=auth, timeout=60
    )
    assert sent.status_code == 200
    assert [m.get("content") for m in sent.json()["messages"]] == [answer]
    assert httpx.get(f"{stack.url}/v1/health/", timeout=10).status_code == 200


def test_a_body_that_is_not_utf8_is_a_client_error(stack: Stack) -> None:
    agent, auth = _agent(stack)
    bad = httpx.post(
        f"{stack.url}/v1/agents/{agent}/messages",
        content=b'{"input": "\xff\xfe"}',
        headers={**auth, "content-type": "application/json"},
    )
    assert 400 <= bad.status_code < 500, bad.text


def test_an_unknown_method_on_a_known_path_is_405_json(stack: Stack) -> None:
    agent, auth = _agent(stack)
    put = httpx.put(f"{stack.url}/v1/agents/{agent}/messages", headers=auth, json={})
    assert put.status_code == 405 and put.json() == {"detail": "Method Not Allowed"}
    assert put.headers["allow"] == "GET, POST"
    assert httpx.put(f"{stack.url}/v1/nowhere", headers=auth).status_code == 404


def test_an_oversized_import_is_413_with_nothing_stored(stack: Stack) -> None:
    auth = {"Authorization": f"Bearer {stack.key}"}
    big = b'{"agents": [], "padding": "' + b"z" * (30 * 1024 * 1024) + b'"}'
    sent = httpx.post(
        f"{stack.url}/v1/agents/import", files={"file": ("big.af", big)}, headers=auth, timeout=120
    )
    assert sent.status_code == 413 and str(MAX_REQUEST_BYTES) in sent.json()["detail"]
    assert httpx.get(f"{stack.url}/v1/agents/", headers=auth).json() == []
