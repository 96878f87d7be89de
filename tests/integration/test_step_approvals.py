"""Approvals (reference §7): a call that needs a person waits; the answer resumes the turn."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cairn.assembly.build import engine_ports
from cairn.config import Settings
from cairn.domain import Agent, Organization
from cairn.domain.messages import ApprovalDecision, Message
from cairn.domain.tool_rules import RequiresApprovalToolRule
from cairn.errors import ConflictError, InvalidArgumentError
from cairn.run.steps.step import Engine
from cairn.store.db import Database
from cairn.tools.subprocess_sandbox import SubprocessSandbox
from tests.fakes.llm_server import FakeLLM, call
from tests.integration.engine_harness import (
    Turn,
    engine_for,
    make_agent,
    send,
    start_run,
    state_of,
    user,
)

RULES = [RequiresApprovalToolRule(tool_name="core_memory_append")]


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def ask(db: Database, org: Organization, fake: FakeLLM) -> tuple[Engine, Agent, Turn]:
    agent = make_agent(db, org, rules=RULES)
    fake.reply(
        "",
        call("core_memory_append", label="human", content="Likes: tea"),
        call("conversation_search", query="tea"),
    )
    engine = engine_for(db, fake)
    return engine, agent, send(engine, agent, "remember I like tea")


def answer(agent: Agent, *decisions: ApprovalDecision) -> Message:
    return Message(
        organization_id=agent.organization_id,
        agent_id=agent.id,
        role="approval",
        approvals=list(decisions),
    )


def test_a_call_needing_approval_stops_the_run(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    engine, agent, turn = ask(db, org, fake)
    assert turn.run.stop_reason == "requires_approval" and turn.run.status == "completed"
    assert turn.roles == ["user", "approval"]
    assert [c.function.name for c in turn.new[1].tool_calls or ()] == [
        "core_memory_append",
        "conversation_search",
    ]
    assert state_of(db, agent)[1]["human"] == "Name: Ada"  # nothing ran
    with pytest.raises(ConflictError, match="waiting for approval"):
        start_run(engine, org.id, agent.id, [user(agent, "hello?")])


def test_approved_calls_run_and_the_turn_goes_on(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    engine, agent, turn = ask(db, org, fake)
    calls = turn.new[1].tool_calls or []
    fake.reply("Saved!")
    resumed = send(
        engine,
        agent,
        answer(agent, *[ApprovalDecision(tool_call_id=c.id, approve=True) for c in calls]),
    )
    assert resumed.run.stop_reason == "end_turn"
    assert resumed.roles == ["approval", "tool", "assistant"]
    assert [r.status for r in resumed.new[1].tool_returns or ()] == ["success", "success"]
    assert state_of(db, agent)[1]["human"] == "Name: Ada\nLikes: tea"
    # the model saw the call followed by both returns
    roles = [m["role"] for m in fake.requests[-1].body["messages"]]
    assert roles[-3:] == ["assistant", "tool", "tool"]


def test_denied_call_returns_the_reason_to_the_model(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    engine, agent, turn = ask(db, org, fake)
    edit, search = turn.new[1].tool_calls or []
    fake.reply("Understood, I won't.")
    resumed = send(
        engine,
        agent,
        answer(
            agent,
            ApprovalDecision(tool_call_id=edit.id, approve=False, reason="not now"),
            ApprovalDecision(tool_call_id=search.id, approve=True),
        ),
    )
    denied, searched = resumed.new[1].tool_returns or []
    assert denied.status == "error" and "User reason: not now" in (denied.func_response or "")
    assert searched.status == "success"
    assert state_of(db, agent)[1]["human"] == "Name: Ada"
    assert resumed.run.stop_reason == "end_turn"


def test_client_side_tool_return_is_taken_as_the_result(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    engine, agent, turn = ask(db, org, fake)
    edit, search = turn.new[1].tool_calls or []
    fake.reply("ok")
    resumed = send(
        engine,
        agent,
        answer(
            agent,
            ApprovalDecision(
                type="tool", tool_call_id=edit.id, tool_return="done on device", status="success"
            ),
            ApprovalDecision(tool_call_id=search.id, approve=True),
        ),
    )
    client = (resumed.new[1].tool_returns or [])[0]
    assert json.loads(client.func_response or "{}")["message"] == "done on device"
    assert state_of(db, agent)[1]["human"] == "Name: Ada"  # the server did not run it


def test_missing_decision_fails_the_answering_run(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    engine, agent, turn = ask(db, org, fake)
    edit = (turn.new[1].tool_calls or [])[0]
    resumed = send(
        engine, agent, answer(agent, ApprovalDecision(tool_call_id=edit.id, approve=True))
    )
    assert resumed.run.status == "failed" and resumed.run.stop_reason == "invalid_tool_call"
    assert "no decision" in (resumed.run.error or {})["message"]


def test_approval_without_a_pending_call_is_refused(db: Database, org: Organization) -> None:
    agent = make_agent(db, org)
    with pytest.raises(InvalidArgumentError, match="No tool call is currently awaiting approval"):
        start_run(
            Engine(db, Settings(), sandbox=SubprocessSandbox(), **engine_ports(Settings())),
            org.id,
            agent.id,
            [answer(agent)],
        )
