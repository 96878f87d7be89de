"""The operator's metrics on AWS (CAIRN_METRICS=emf, docs/operations.md): each committed step
writes one CloudWatch embedded-metric-format line (steps, latencies, tokens, failed runs),
and each request or step held back by a limit a throttle, each for the stack and for its
organization; with metrics off (the local default) nothing is written."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from cairn.assembly.operator import operate
from cairn.store.db import Database
from tests.api.conftest import make_stack
from tests.api.test_usage import LLM
from tests.fakes.llm_server import call


def records(out: str) -> list[dict[str, Any]]:
    found = []
    for line in out.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            found.append(json.loads(line))
    return found


def test_each_step_is_one_emf_record_for_the_stack_and_its_organization(
    db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with make_stack(db, metrics="emf") as stack:
        client = stack.client()
        agent = client.agents.create(
            name="a",
            llm_config=LLM,  # type: ignore[arg-type]
            memory_blocks=[{"label": "human", "value": "Ada."}],
        )
        capsys.readouterr()
        stack.fake.reply("", call("memory_insert", label="human", new_str="tea"), usage=(700, 30))
        stack.fake.reply("Noted.", usage=(800, 5))
        client.agents.messages.create(agent.id, input="I like tea")
        said = records(capsys.readouterr().out)
    stack_wide = [r for r in said if "organization_id" not in r]
    tenant = [r for r in said if r.get("organization_id") == stack.org_id]
    assert len(stack_wide) == len(tenant) == 2 and len(said) == 4
    for record in stack_wide:
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "Cairn" and directive["Dimensions"] == [["service"]]
        units = {m["Name"]: m["Unit"] for m in directive["Metrics"]}
        assert units["StepLatency"] == units["ModelLatency"] == "Milliseconds"
        assert record["Steps"] == [1.0] and record["ModelLatency"][0] > 0
        assert record["StepLatency"][0] >= record["ModelLatency"][0]
        assert "RunsFailed" not in record
    for record in tenant:  # what the organization used, not the stack's latencies
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        assert directive["Dimensions"] == [["organization_id", "service"]]
        assert {m["Name"] for m in directive["Metrics"]} == {"Steps", "InputTokens", "OutputTokens"}
    assert sorted((r["InputTokens"][0], r["OutputTokens"][0]) for r in tenant) == [
        (700.0, 30.0),
        (800.0, 5.0),
    ]


def test_a_throttle_and_a_failed_run_are_counted_for_their_organization(
    db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with make_stack(db, metrics="emf") as stack:
        client = stack.client()
        agent = client.agents.create(name="a", llm_config=LLM)  # type: ignore[arg-type]
        operate(
            db,
            {"action": "limits", "organization_id": stack.org_id, "monthly_tokens": 100},
        )
        capsys.readouterr()
        # A run whose first step spends the budget: its second ends it, as failed.
        stack.fake.reply("", call("conversation_search", query="tea"), usage=(150, 5))
        client.agents.messages.create(agent.id, input="hello")
        said = [r for r in records(capsys.readouterr().out) if "organization_id" not in r]
        assert [r.get("RunsFailed") for r in said if "Steps" in r] == [None, [1.0]]
        assert [r["limit"] for r in said if "Throttles" in r] == ["monthly_tokens"]
        refused = httpx.post(
            f"{stack.url}/v1/agents/{agent.id}/messages",
            json={"messages": [{"role": "user", "content": "again"}]},
            headers={"Authorization": f"Bearer {stack.key}"},
            timeout=30,
        )
        assert refused.status_code == 429
        throttles = [r for r in records(capsys.readouterr().out) if "Throttles" in r]
    assert len(throttles) == 2  # the stack's and the organization's
    assert [r.get("organization_id") for r in throttles] == [None, stack.org_id]
    assert all(r["limit"] == "monthly_tokens" and r["Throttles"] == [1.0] for r in throttles)


def test_metrics_are_off_unless_the_stack_asks(
    db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    with make_stack(db) as stack:
        client = stack.client()
        agent = client.agents.create(name="a", llm_config=LLM)  # type: ignore[arg-type]
        stack.fake.reply("Hi.", usage=(10, 1))
        capsys.readouterr()
        client.agents.messages.create(agent.id, input="hello")
        assert records(capsys.readouterr().out) == []
