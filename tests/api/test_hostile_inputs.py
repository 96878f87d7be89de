"""Hostile inputs against the local HTTP bridge and the real handler: none may answer 5xx,
hang, or leave anything half-written (docs/reliability.md counts what this tries).

Each payload goes to every writing route that takes text; each answer must be a 4xx (or a
2xx where the input is legal), within the client's timeout, and the stack must still answer
afterwards.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from cairn.domain import Organization, User
from cairn.store import tenancy
from tests.api.conftest import Stack
from tests.fakes.llm_server import Reply

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 100_000}

# Raw bodies: what a JSON library would never produce.
DEEP = b'{"input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
NUL, SURROGATE = b'"a\\u0000b"', b'"\\ud800"'
RAW_BODIES = {
    "nul": b'{"input": %s, "name": %s, "value": %s, "text": %s}' % ((NUL,) * 4),
    "lone surrogate": b'{"input": %s, "name": %s, "value": %s, "text": %s}' % ((SURROGATE,) * 4),
    "deep nesting": DEEP,
    "deep object": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "huge number": b'{"input": "x", "max_steps": 1' + b"0" * 5000 + b"}",
    "nan": b'{"input": "x", "max_steps": NaN, "limit": Infinity}',
    "not json": b"{'input': 'x'",
    "not an object": b'["input", "x"]',
    "null": b"null",
    "empty": b"",
    "invalid utf-8": b'{"input": "\xff\xfe\xfd"}',
    "duplicate keys": b'{"input": "x", "input": 5}',
    "wrong types": b'{"input": 5, "name": [], "value": {}, "text": 1.5, "tags": "x"}',
    "long key": b'{"' + b"k" * 100_000 + b'": 1}',
    "many keys": b"{" + b",".join(b'"k%d": %d' % (n, n) for n in range(20_000)) + b"}",
}
JSON = {"content-type": "application/json"}
ODD_IDS = ["..%2F..%2Fetc", "agent-%00", "agent-" + "a" * 5000, "%F0%9F%92%A9", "agent-'; DROP"]


@pytest.fixture
def target(stack: Stack) -> Iterator[tuple[Stack, dict[str, str]]]:
    stack.fake.when(lambda _: True, Reply(text="ok"))
    yield stack, {"Authorization": f"Bearer {stack.key}"}


def writes(stack: Stack, auth: dict[str, str]) -> list[tuple[str, str]]:
    """Every route that stores text a caller sends, on a fresh agent."""
    with httpx.Client(base_url=stack.url, headers=auth, timeout=30) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        block = client.post("/v1/blocks/", json={"label": "b", "value": "v"}).json()
    a = f"/v1/agents/{agent['id']}"
    return [
        ("POST", "/v1/agents/"),
        ("PATCH", a),
        ("POST", f"{a}/messages"),
        ("POST", f"{a}/messages/async"),
        ("POST", f"{a}/messages/stream"),
        ("POST", f"{a}/messages/capture"),
        ("POST", f"{a}/archival-memory"),
        ("PATCH", f"{a}/core-memory/blocks/human"),
        ("POST", "/v1/blocks/"),
        ("PATCH", f"/v1/blocks/{block['id']}"),
        ("POST", "/v1/tools/"),
        ("POST", "/v1/archives/"),
        ("POST", "/v1/runs/"),
    ]


def test_no_hostile_input_gets_a_server_error_or_hangs(
    target: tuple[Stack, dict[str, str]],
) -> None:
    stack, auth = target
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    routes = writes(stack, auth)
    with httpx.Client(base_url=stack.url, headers=auth, timeout=30) as client:
        for name, body in RAW_BODIES.items():
            for method, path in routes:
                try:
                    answer = client.request(method, path, content=body, headers=JSON)
                except httpx.TimeoutException:
                    failures.append(f"{name} {method} {path}: no answer in 30 s")
                    continue
                statuses[answer.status_code] += 1
                if answer.status_code >= 500:
                    failures.append(
                        f"{name} {method} {path}: {answer.status_code} {answer.text[:200]}"
                    )
                elif answer.status_code >= 400:
                    assert "detail" in answer.json() or "error" in answer.json(), answer.text
        for odd in ODD_IDS:
            for method, path in (
                ("GET", f"/v1/agents/{odd}"),
                ("DELETE", f"/v1/tools/{odd}"),
                ("PATCH", f"/v1/blocks/{odd}"),
                ("GET", f"/v1/runs/{odd}"),
            ):
                answer = client.request(method, path, json={})
                statuses[answer.status_code] += 1
                if answer.status_code >= 500 or answer.status_code < 400:
                    failures.append(f"id {odd[:30]} {method}: {answer.status_code}")
        for method in ("TRACE", "PROPFIND", "CONNECT"):
            answer = client.request(method, "/v1/agents/")
            statuses[answer.status_code] += 1
            if answer.status_code != 405 or "json" not in answer.headers["content-type"]:
                failures.append(f"{method}: {answer.status_code} {answer.headers['content-type']}")
        assert client.get("/v1/health/").status_code == 200
    assert failures == [], "\n".join(failures)
    tried = sum(statuses.values())
    assert tried >= len(RAW_BODIES) * len(routes)
    print(f"hostile inputs: {tried} requests, statuses {dict(sorted(statuses.items()))}")


def test_nothing_half_written_by_rejected_text(target: tuple[Stack, dict[str, str]]) -> None:
    """NUL and lone surrogates are refused (422) before anything is stored."""
    stack, auth = target
    before = httpx.get(f"{stack.url}/v1/agents/", headers=auth).json()
    for text in ("a\u0000b", "\ud800"):
        body = json.dumps(
            {"llm_config": LLM, "name": "x", "memory_blocks": [{"label": "human", "value": text}]}
        )
        made = httpx.post(
            f"{stack.url}/v1/agents/",
            content=body,
            headers={**auth, "content-type": "application/json"},
        )
        assert made.status_code == 422, made.text
    assert httpx.get(f"{stack.url}/v1/agents/", headers=auth).json() == before
    blocks = httpx.get(f"{stack.url}/v1/blocks/", headers=auth, params={"label": "human"}).json()
    assert all("\u0000" not in b["value"] for b in blocks)


def test_another_organizations_things_cannot_be_deleted_or_seen(
    target: tuple[Stack, dict[str, str]],
) -> None:
    stack, auth = target
    with stack.runtime.db.transaction() as conn:
        other = tenancy.create_organization(conn, Organization(name="other"))
        person = tenancy.create_user(conn, User(organization_id=other.id, name="eve"))
        _, other_key = tenancy.create_api_key(conn, other.id, person.id, name="other")
    theirs = {"Authorization": f"Bearer {other_key}"}
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}, headers=theirs).json()
        block = client.post("/v1/blocks/", json={"label": "b", "value": "v"}, headers=theirs)
        tool = client.post("/v1/tools/", json={"source_code": SOURCE}, headers=theirs)
        assert block.status_code == 200 and tool.status_code == 200, tool.text
        paths = [
            f"/v1/agents/{agent['id']}",
            f"/v1/blocks/{block.json()['id']}",
            f"/v1/tools/{tool.json()['id']}",
        ]
        for path in paths:
            assert client.delete(path, headers=auth).status_code == 404, path
            assert client.get(path, headers=auth).status_code == 404, path
            assert client.get(path, headers=theirs).status_code == 200, path  # still there


SOURCE = '''def shout(text: str) -> str:
    """Say it louder.

    Args:
        text: what to say
    """
    return text.upper()
'''


@pytest.mark.parametrize("media", ["text/plain", "application/x-www-form-urlencoded", "text/xml"])
def test_a_body_of_a_type_no_route_takes_is_415_on_every_writing_route(
    stack: Stack, media: str
) -> None:
    """Every POST, PUT and PATCH the server describes, each with an id that does not exist:
    a body it cannot read is 415 naming its type, before anything else looks at it."""
    spec = httpx.get(f"{stack.url}/openapi.json", timeout=30).json()
    headers = {"Authorization": f"Bearer {stack.key}", "Content-Type": media}
    answers: dict[str, int] = {}
    with httpx.Client(base_url=stack.url, headers=headers, timeout=30) as http:
        for path, operations in spec["paths"].items():
            for method in set(operations) & {"post", "put", "patch"}:
                url = path.replace("{", "x-").replace("}", "")
                answer = http.request(method, url, content=b'{"name": "x"}')
                answers[f"{method} {path}"] = answer.status_code
                # The routes that take a form (an agent file, a file for a folder).
                form = path == "/v1/agents/import" or path.endswith("/upload")
                if not form or media == "text/plain" or media == "text/xml":
                    assert answer.status_code == 415, (method, path, answer.text)
                    assert media in answer.text
    assert len(answers) > 40
    # JSON still goes through, with or without its Content-Type (as FastAPI reads it).
    for kind in ("application/json", "application/json; charset=utf-8", None):
        sent = {"Authorization": f"Bearer {stack.key}", **({"Content-Type": kind} if kind else {})}
        made = httpx.post(
            f"{stack.url}/v1/blocks/",
            headers=sent,
            timeout=30,
            content=json.dumps({"label": "l", "value": "v"}).encode(),
        )
        assert made.status_code == 200, (kind, made.text)
