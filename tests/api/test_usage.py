"""What an organization used, through GET /v1/usage and the operator's `usage` action: steps,
model calls, tokens and tool calls per day, agent and model, priced by the table the operator
can change; each organization sees its own, bad ranges are 4xx naming the field."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from cairn.assembly.operator import operate
from cairn.config import Settings
from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
PRICES = {"gpt-test": {"input": 1.0, "cached_input": 0.5, "output": 2.0}}


def usage(stack: Stack, key: str | None = None, **params: Any) -> httpx.Response:
    return httpx.get(
        f"{stack.url}/v1/usage",
        params=params,
        headers={"Authorization": f"Bearer {key or stack.key}"},
        timeout=30,
    )


def other_key(db: Database) -> tuple[str, str]:
    from cairn.domain import Organization, User
    from cairn.store import tenancy

    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="other"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="eve"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="t")
    return org.id, key


def test_usage_per_day_agent_and_model_with_its_cost(db: Database) -> None:
    with make_stack(db, prices=json.dumps(PRICES)) as stack:
        client = stack.client()
        agent = client.agents.create(name="a", llm_config=LLM)  # type: ignore[arg-type]
        other = client.agents.create(name="b", llm_config=LLM)  # type: ignore[arg-type]
        stack.fake.reply("", call("memory_insert", label="human", new_str="tea"), usage=(1000, 200))
        stack.fake.reply("Noted.", usage=(1500, 50))
        client.agents.messages.create(agent.id, input="I like tea")
        stack.fake.reply("Hi.", usage=(300, 10))
        client.agents.messages.create(other.id, input="hello")

        found = usage(stack).json()
        today = datetime.now(UTC).date().isoformat()
        assert found["end_date"] == today and found["currency"] == "USD"
        rows = {r["agent_id"]: r for r in found["rows"]}
        mine = rows[agent.id]
        assert (mine["day"], mine["model"]) == (today, "gpt-test")
        assert (mine["steps"], mine["model_calls"], mine["tool_calls"]) == (2, 2, 1)
        assert (mine["prompt_tokens"], mine["completion_tokens"]) == (2500, 250)
        assert mine["estimated_cost"] == pytest.approx((2500 * 1.0 + 250 * 2.0) / 1e6)
        assert found["total"]["steps"] == 3 and found["total"]["prompt_tokens"] == 2800
        assert found["total"]["estimated_cost"] == pytest.approx((2800 + 260 * 2) / 1e6)
        assert found["unpriced_models"] == []
        # One agent's alone; days without steps: nothing.
        only = usage(stack, agent_id=other.id).json()
        assert [r["agent_id"] for r in only["rows"]] == [other.id]
        yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
        assert usage(stack, start_date=yesterday, end_date=yesterday).json()["rows"] == []


def test_a_model_without_a_price_is_counted_and_named(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(name="a", llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("Hi.", usage=(100, 10))
    client.agents.messages.create(agent.id, input="hello")
    found = usage(stack).json()
    assert found["rows"][0]["estimated_cost"] is None
    assert found["unpriced_models"] == ["gpt-test"] and found["total"]["prompt_tokens"] == 100


def test_each_organization_sees_its_own_and_the_operator_sees_all(
    stack: Stack, db: Database
) -> None:
    client = stack.client()
    agent = client.agents.create(name="a", llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("Hi.", usage=(100, 10))
    client.agents.messages.create(agent.id, input="hello")
    org, key = other_key(db)
    assert usage(stack, key).json()["rows"] == []
    assert usage(stack, key, agent_id=agent.id).json()["rows"] == []  # not theirs to read
    everyone = operate(db, {"action": "usage"})
    assert [(r["organization_id"], r["steps"]) for r in everyone["rows"]] == [(stack.org_id, 1)]
    one = operate(db, {"action": "usage", "organization_id": org})
    assert one["rows"] == []


@pytest.mark.parametrize(
    ("params", "status", "named"),
    [
        ({"start_date": "2026-02-01", "end_date": "2026-01-01"}, 400, "start_date"),
        ({"start_date": "2024-01-01", "end_date": "2026-01-01"}, 400, "end_date"),
        ({"start_date": "yesterday"}, 422, "start_date"),
        ({"end_date": "2026-13-01"}, 422, "end_date"),
    ],
)
def test_bad_ranges_name_the_field(
    stack: Stack, params: dict[str, str], status: int, named: str
) -> None:
    reply = usage(stack, **params)
    assert reply.status_code == status and named in reply.text


def test_the_price_table_is_checked_when_the_server_starts() -> None:
    for bad, named in (
        ("not json", "not JSON"),
        ('{"gpt-x": {"input": -1}}', "gpt-x.input"),
        ('{"gpt-x": {"tokens": 1}}', "gpt-x.tokens"),
        ('["gpt-x"]', "an object of models"),
    ):
        with pytest.raises(ValueError, match=named):
            Settings(prices=bad)
