"""An organization's budgets and limits (docs/operations.md, "Budgets and limits"), set by the
operator: requests per minute per API key, a monthly token or cost budget. Past one, a request
gets 429 with Retry-After and a message naming the limit; a run in progress ends before its
next model call; nothing is half-written; other organizations and keys are untouched."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from cairn.assembly.operator import operate
from cairn.domain.limits import next_month
from cairn.errors import InvalidArgumentError, NotFoundError
from cairn.store import tenancy
from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.api.test_usage import LLM, other_key
from tests.fakes.llm_server import call


def limits(db: Database, org: str, **asked: Any) -> dict[str, Any]:
    return operate(db, {"action": "limits", "organization_id": org, **asked})


def get(stack: Stack, path: str, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key or stack.key}"}
    return httpx.get(f"{stack.url}{path}", headers=headers, timeout=30)


def send(stack: Stack, agent_id: str, text: str) -> httpx.Response:
    return httpx.post(
        f"{stack.url}/v1/agents/{agent_id}/messages",
        json={"messages": [{"role": "user", "content": text}]},
        headers={"Authorization": f"Bearer {stack.key}"},
        timeout=60,
    )


def generate(stack: Stack, name: str, prompt: str) -> httpx.Response:
    """POST /v1/tools/generate-tool for a tool of that name."""
    return httpx.post(
        f"{stack.url}/v1/tools/generate-tool",
        json={"tool_name": name, "prompt": prompt, "validation_errors": []},
        headers={"Authorization": f"Bearer {stack.key}"},
        timeout=30,
    )


def away_from_the_minutes_end() -> None:
    # The count is per calendar minute: a test's few requests must not straddle two.
    left = 60 - datetime.now(UTC).second
    if left < 10:
        time.sleep(left + 0.1)


def test_a_key_past_its_requests_per_minute_gets_429_naming_the_limit(
    stack: Stack, db: Database
) -> None:
    limits(db, stack.org_id, requests_per_minute=3)
    with db.transaction() as conn:
        user = tenancy.first_user(conn, stack.org_id)
        assert user is not None
        _, second = tenancy.create_api_key(conn, stack.org_id, user.id, name="second")
    _, stranger = other_key(db)
    away_from_the_minutes_end()
    assert [get(stack, "/v1/agents/").status_code for _ in range(3)] == [200] * 3
    refused = get(stack, "/v1/agents/")
    assert refused.status_code == 429
    assert "requests_per_minute: 3" in refused.json()["detail"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    # Per key: the organization's other key, and another organization, are not held.
    assert get(stack, "/v1/agents/", second).status_code == 200
    assert get(stack, "/v1/agents/", stranger).status_code == 200
    # Lifted: the next request passes at once.
    limits(db, stack.org_id, requests_per_minute=0)
    assert get(stack, "/v1/agents/").status_code == 200


def test_a_spent_token_budget_refuses_new_runs_until_next_month(stack: Stack, db: Database) -> None:
    client = stack.client()
    agent = client.agents.create(name="a", llm_config=LLM)  # type: ignore[arg-type]
    limits(db, stack.org_id, monthly_tokens=1000)
    stack.fake.reply("Hi.", usage=(900, 150))
    assert send(stack, agent.id, "hello").status_code == 200  # not spent when it started
    shown = get(stack, "/v1/usage/limits").json()
    assert shown["limits"]["monthly_tokens"] == 1000 and shown["month"]["tokens"] == 1050
    before = len(client.agents.messages.list(agent.id, limit=100).items)
    runs = len(list(client.runs.list()))
    refused = send(stack, agent.id, "again")
    assert refused.status_code == 429
    assert "monthly token budget (monthly_tokens)" in refused.json()["detail"]
    resumes = next_month(datetime.now(UTC))
    assert resumes.date().isoformat() in refused.json()["detail"]
    wait = int(refused.headers["Retry-After"])
    assert 0 < wait - (resumes - datetime.now(UTC)).total_seconds() < 30
    # Nothing half-written: no run, no message; the model was not called.
    assert len(client.agents.messages.list(agent.id, limit=100).items) == before
    assert len(list(client.runs.list())) == runs and stack.fake.pending == 0
    # Background sends and summaries are refused alike; another organization is not.
    async_send = httpx.post(
        f"{stack.url}/v1/agents/{agent.id}/messages/async",
        json={"messages": [{"role": "user", "content": "later"}]},
        headers={"Authorization": f"Bearer {stack.key}"},
        timeout=30,
    )
    assert async_send.status_code == 429
    assert len(list(client.runs.list())) == runs
    generated = generate(stack, "add", "add two numbers")
    assert generated.status_code == 429 and "monthly_tokens" in generated.text
    assert stack.fake.pending == 0 and len(stack.fake.requests) == 1
    # Raised by the operator: runs start again.
    limits(db, stack.org_id, monthly_tokens=10_000)
    stack.fake.reply("Back.", usage=(10, 1))
    assert send(stack, agent.id, "again").status_code == 200


def test_a_run_in_progress_stops_before_its_next_model_call_once_the_budget_is_spent(
    stack: Stack, db: Database
) -> None:
    client = stack.client()
    agent = client.agents.create(
        name="a",
        llm_config=LLM,  # type: ignore[arg-type]
        memory_blocks=[{"label": "human", "value": "Ada."}],
    )
    limits(db, stack.org_id, monthly_tokens=500)
    stack.fake.reply("", call("memory_insert", label="human", new_str="tea"), usage=(800, 20))
    stack.fake.reply("Noted.", usage=(900, 5))  # never asked for
    reply = send(stack, agent.id, "I like tea")
    assert reply.status_code == 200
    assert reply.json()["stop_reason"]["stop_reason"] == "error"
    assert stack.fake.pending == 1 and len(stack.fake.requests) == 1
    runs = list(client.runs.list())
    run = runs[0]
    assert run.status == "failed" and run.stop_reason == "error"
    found = get(stack, f"/v1/runs/{run.id}").json()
    assert "monthly_tokens" in json.dumps(found)
    # The step that ran is whole: its tool's edit is kept, and counted once.
    assert "tea" in client.agents.blocks.retrieve("human", agent_id=agent.id).value
    assert get(stack, "/v1/usage/limits").json()["month"]["tokens"] == 820


def test_a_cost_budget_counts_at_the_operators_prices(db: Database) -> None:
    prices = {"gpt-test": {"input": 1000.0, "output": 2000.0}}  # $ per million tokens
    with make_stack(db, prices=json.dumps(prices)) as stack:
        client = stack.client()
        agent = client.agents.create(name="a", llm_config=LLM)  # type: ignore[arg-type]
        limits(db, stack.org_id, monthly_cost_usd=1.5)
        stack.fake.reply("Hi.", usage=(1000, 100))  # $1.00 + $0.20
        assert send(stack, agent.id, "hello").status_code == 200
        month = get(stack, "/v1/usage/limits").json()["month"]
        assert month["estimated_cost"] == pytest.approx(1.2)
        stack.fake.reply("Hi.", usage=(1000, 100))
        assert send(stack, agent.id, "again").status_code == 200  # $1.20 < $1.50
        refused = send(stack, agent.id, "more")
        assert refused.status_code == 429 and "monthly_cost_usd" in refused.json()["detail"]


def test_the_operator_sets_limits_checked_and_each_organization_reads_its_own(
    stack: Stack, db: Database
) -> None:
    other, key = other_key(db)
    shown = limits(db, stack.org_id, monthly_tokens=5_000_000, requests_per_minute=120)
    assert shown["limits"] == {
        "monthly_tokens": 5_000_000,
        "monthly_cost_usd": None,
        "requests_per_minute": 120,
        "max_runs": None,
    }
    # Unnamed kinds are kept; 0 lifts one.
    kept = limits(db, stack.org_id, requests_per_minute=0)["limits"]
    assert (kept["monthly_tokens"], kept["requests_per_minute"]) == (5_000_000, None)
    assert get(stack, "/v1/usage/limits").json()["limits"] == kept
    theirs = get(stack, "/v1/usage/limits", key).json()
    assert theirs["organization_id"] == other and theirs["limits"]["monthly_tokens"] is None
    for asked, named in (
        ({"monthly_tokens": -5}, "monthly_tokens"),
        ({"monthly_tokens": "lots"}, "monthly_tokens"),
        ({"requests_per_minute": 1.5}, "requests_per_minute"),
        ({"requests_per_minute": 2**40}, "requests_per_minute"),
        ({"monthly_cost_usd": -1}, "monthly_cost_usd"),
        ({"monthly_cost_usd": True}, "monthly_cost_usd"),
        ({"max_runs": 2}, "CAIRN_ORG_MAX_RUNS"),  # the share is off here: it would do nothing
    ):
        with pytest.raises(InvalidArgumentError, match=named):
            limits(db, stack.org_id, **asked)
    assert limits(db, stack.org_id)["limits"] == kept  # nothing changed by a refusal
    with pytest.raises(NotFoundError):
        limits(db, "org-00000000-0000-4000-8000-000000000000", monthly_tokens=1)


def test_next_month_rolls_over_the_year() -> None:
    assert next_month(datetime(2026, 12, 31, 23, 59, tzinfo=UTC)) == datetime(
        2027, 1, 1, tzinfo=UTC
    )
    assert next_month(datetime(2026, 2, 1, tzinfo=UTC)) == datetime(2026, 3, 1, tzinfo=UTC)


def test_a_generated_tool_counts_its_model_call_in_the_months_budget(
    stack: Stack, db: Database
) -> None:
    """generate-tool calls the model outside any step: its tokens (and their price) go to the
    month's total the budgets read, so a budget cannot be passed by generating tools."""
    limits(db, stack.org_id, monthly_tokens=1_000)
    source = 'def hello() -> str:\n    """Say hello."""\n    return "hello"\n'
    stack.fake.reply(
        "",
        call(
            "generate_tool",
            raw_source_code=source,
            sample_args_json="{}",
            pip_requirements_json="{}",
        ),
        usage=(900, 150),
    )
    made = generate(stack, "hello", "say hello")
    assert made.status_code == 200, made.text
    month = get(stack, "/v1/usage/limits").json()["month"]
    assert month["tokens"] == 1_050
    # and in the usage rows, the organization's own (no agent's): they showed nothing
    used = get(stack, "/v1/usage").json()
    (row,) = used["rows"]
    assert row["agent_id"] is None and row["model"] and row["steps"] == 0
    assert (row["model_calls"], row["prompt_tokens"], row["completion_tokens"]) == (1, 900, 150)
    assert used["total"]["prompt_tokens"] == 900
    # Now spent: the next generation is refused before any model call.
    again = generate(stack, "hello", "say hello")
    assert again.status_code == 429 and "monthly_tokens" in again.text
    assert len(stack.fake.requests) == 1


def test_embeddings_are_metered_priced_and_refused_on_a_spent_budget(
    stack: Stack, db: Database
) -> None:
    """An organization within its budget could spend embedding money without limit (by
    uploading files, say): each call's tokens now count in its month, at the operator's
    prices, and once the budget is spent an embedding is refused as a send is."""
    headers = {"Authorization": f"Bearer {stack.key}"}
    with httpx.Client(base_url=f"{stack.url}/v1", headers=headers, timeout=30) as http:
        archive = http.post(
            "/archives/", json={"name": "mem", "embedding": "openai/text-embedding-3-small"}
        ).json()
        text = "Ada takes her tea at five, with lemon and no sugar. " * 8
        added = http.post(f"/archives/{archive['id']}/passages", json={"text": text})
        assert added.status_code == 200, added.text
        found = http.post("/passages/search", json={"query": "tea", "archive_id": archive["id"]})
        assert found.status_code == 200 and len(found.json()) == 1
        used = http.get("/usage").json()
        (row,) = used["embeddings"]
        assert row["model"] == "text-embedding-3-small" and row["calls"] == 2
        said = [b["input"] for b in stack.fake.embedding_requests]
        counted = sum(
            len(t) // 4 for texts in said for t in (texts if isinstance(texts, list) else [texts])
        )
        assert row["tokens"] == counted > len(text) // 4  # as the provider counted them
        assert row["estimated_cost"] == pytest.approx(counted * 0.02 / 1e6, abs=1e-6)
        with db.connection() as conn:  # kept to the ten-millionth: a query's is 2e-7 $
            kept = conn.execute(
                "SELECT cost_usd::float8 AS c FROM org_usage_months WHERE organization_id = %s",
                (stack.org_id,),
            ).fetchone()
        assert kept is not None and kept["c"] == pytest.approx(counted * 0.02 / 1e6, abs=1e-12)
        assert used["total"]["embedding_tokens"] == counted
        month = http.get("/usage/limits").json()["month"]
        assert month["embedding_tokens"] == counted and month["tokens"] >= counted

        limits(db, stack.org_id, monthly_tokens=counted)  # spent, by embeddings alone
        asked = len(stack.fake.embedding_requests)
        refused = http.post(f"/archives/{archive['id']}/passages", json={"text": "more"})
        assert refused.status_code == 429 and "monthly_tokens" in refused.text
        assert int(refused.headers["Retry-After"]) > 0
        searched = http.post("/passages/search", json={"query": "x", "archive_id": archive["id"]})
        assert searched.status_code == 429
        assert len(stack.fake.embedding_requests) == asked  # the provider was not asked
        listed = http.get(f"/archives/{archive['id']}/passages").json()
        assert len(listed) == 1  # nothing half-stored
