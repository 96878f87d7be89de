"""The step and its loop policies, on real Postgres and the real SDKs against the fake LLM."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest

from cairn.domain import Organization
from cairn.domain.tool_rules import (
    ChildArgNode,
    ChildToolRule,
    InitToolRule,
    TerminalToolRule,
)
from cairn.errors import InvalidArgumentError
from cairn.store import agents, archives, blocks, steps
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM, call
from tests.integration.engine_harness import engine_for, make_agent, send, state_of


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def test_v1_plain_text_ends_the_turn_after_one_call(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    fake.reply("Hello Ada!", usage=(300, 5))
    turn = send(engine_for(db, fake), agent, "hi")
    assert turn.run.status == "completed" and turn.run.stop_reason == "end_turn"
    assert turn.roles == ["user", "assistant"] and turn.new[1].text == "Hello Ada!"
    assert turn.run.usage.total_tokens == 305 and turn.run.usage.step_count == 1
    body = fake.requests[0].body
    # a new letta_v1_agent sends just the system message and the user's text, as is
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == "hi" and body["tool_choice"] == "auto"
    assert "send_message" not in fake.requests[0].tool_names
    fresh, _, context = state_of(db, agent)
    assert [m.id for m in context[-2:]] == [m.id for m in turn.new]
    assert fresh.last_stop_reason == "end_turn" and fresh.context_tokens == 305


def test_memory_edit_persists_with_history_and_rebuilds_the_prompt(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    fake.reply("", call("core_memory_append", label="human", content="Likes: tea"))
    fake.reply("Noted.")
    turn = send(engine_for(db, fake), agent, "I like tea")
    assert turn.roles == ["user", "assistant", "tool", "assistant"]
    assert turn.new[2].tool_returns[0].status == "success"  # type: ignore[index]
    _, values, context = state_of(db, agent)
    assert values["human"] == "Name: Ada\nLikes: tea"
    # the second request already shows the edited block in its system message
    assert "Likes: tea" in fake.requests[1].body["messages"][0]["content"]
    assert "Likes: tea" in context[0].text
    with db.connection() as conn:
        human = next(b for b in blocks.for_agent(conn, org.id, agent.id) if b.label == "human")
        history = blocks.history(conn, org.id, human.id)
    assert history[-1].actor_type == "agent" and history[-1].actor_id == agent.id


def test_unchanged_memory_keeps_the_system_message(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    _, _, before = state_of(db, agent)
    fake.reply("one").reply("two")
    engine = engine_for(db, fake)
    send(engine, agent, "a")
    send(engine, agent, "b")
    _, _, after = state_of(db, agent)
    assert after[0].id == before[0].id and after[0].text == before[0].text
    assert fake.requests[0].body["messages"][0] == fake.requests[1].body["messages"][0]


def test_v2_heartbeats_and_send_message(db: Database, org: Organization, fake: FakeLLM) -> None:
    agent = make_agent(db, org, "memgpt_v2_agent")
    fake.reply("", call("core_memory_append", label="human", content="Tea", request_heartbeat=True))
    fake.reply("thinking out loud")  # no tool call: a heartbeat asks for one
    fake.reply("", call("send_message", message="Got it!"))
    turn = send(engine_for(db, fake), agent, "I like tea")
    assert turn.run.stop_reason == "end_turn" and len(fake.requests) == 3
    assert turn.roles == [
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    # base rules put a continue rule on memory tools: Letta's wording for that heartbeat
    assert json.loads(turn.new[3].text)["reason"].endswith("Continuing: continue tool rule.")
    assert "No tool was called" in json.loads(turn.new[5].text)["reason"]
    first = fake.requests[0]
    assert first.body["tool_choice"] == "required"
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in first.body["tools"]}
    assert "request_heartbeat" in schemas["core_memory_append"]["required"]
    assert "request_heartbeat" not in schemas["send_message"]["properties"]  # terminal
    # a new memgpt_v2_agent's first request carries the startup exchange and login
    assert [m["role"] for m in first.body["messages"]] == [
        "system",
        "assistant",
        "tool",
        "user",
        "user",
    ]


def test_v2_request_heartbeat_decides_without_rules(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org, "memgpt_v2_agent", base_rules=False)
    fake.reply("", call("core_memory_append", label="human", content="x", request_heartbeat=True))
    fake.reply("", call("core_memory_append", label="human", content="y", request_heartbeat=False))
    turn = send(engine_for(db, fake), agent, "hi")
    assert turn.run.stop_reason == "end_turn" and len(fake.requests) == 2
    assert "request_heartbeat=true" in json.loads(turn.new[3].text)["reason"]
    assert turn.roles[-1] == "tool"


def test_sleeptime_agent_ends_on_finish_edits(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org, "sleeptime_agent")
    fake.reply("", call("memory_insert", label="human", new_str="Likes: tea"))
    fake.reply("", call("memory_finish_edits"))
    turn = send(engine_for(db, fake), agent, "Messages:\nuser: I like tea")
    assert turn.run.stop_reason == "end_turn" and len(fake.requests) == 2
    assert state_of(db, agent)[1]["human"] == "Name: Ada\nLikes: tea"


def test_max_steps_stops_the_run(db: Database, org: Organization, fake: FakeLLM) -> None:
    agent = make_agent(db, org)
    for _ in range(3):
        fake.reply("", call("conversation_search", query="tea"))
    turn = send(engine_for(db, fake), agent, "search forever", max_steps=2)
    assert turn.run.stop_reason == "max_steps" and turn.run.status == "completed"
    assert len(fake.requests) == 2 and turn.roles[-1] == "tool"


def test_invalid_calls_become_error_results_and_the_turn_goes_on(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    fake.reply("", call("no_such_tool", x=1), call("core_memory_append", label="nope", content="x"))
    fake.reply("", call("core_memory_append", wrong="args"))
    fake.reply("Sorry, done.")
    turn = send(engine_for(db, fake), agent, "go")
    assert turn.run.stop_reason == "end_turn"
    first, second = turn.new[2].tool_returns, turn.new[4].tool_returns
    assert [r.status for r in first] == ["error", "error"]  # type: ignore[union-attr]
    assert "not available" in first[0].func_response  # type: ignore[index,operator]
    assert "No memory block with label `nope`" in first[1].func_response  # type: ignore[index,operator]
    assert "Invalid arguments to `core_memory_append`" in second[0].func_response  # type: ignore[index,operator]


def test_arguments_that_are_not_json_are_an_error_result(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    fake.reply("", call("core_memory_append"), raw_arguments="{oops")
    fake.reply("ok")
    turn = send(engine_for(db, fake), agent, "go")
    assert "not valid JSON" in turn.new[2].tool_returns[0].func_response  # type: ignore[index,operator]
    assert turn.run.stop_reason == "end_turn"


def test_prefilled_args_override_and_invalid_ones_stop_the_run(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    rules = [
        InitToolRule(tool_name="archival_memory_insert", args={"tags": ["auto"]}),
        TerminalToolRule(tool_name="archival_memory_insert"),
    ]
    agent = make_agent(db, org, rules=rules)
    fake.reply("", call("archival_memory_insert", content="fact", tags=["model"]))
    send(engine_for(db, fake), agent, "remember")
    with db.connection() as conn:
        archive = archives.archive_for_agent(conn, org.id, agent.id)
        assert archive is not None
        stored = archives.list_passages(conn, org.id, archive.id)
    assert [(p.text, p.tags) for p in stored] == [("fact", ["auto"])]
    bad_rule = ChildToolRule(
        tool_name="conversation_search",
        children=["core_memory_append"],
        child_arg_nodes=[ChildArgNode(name="core_memory_append", args={"label": 7})],
    )
    with pytest.raises(InvalidArgumentError, match="must be of type string"):
        make_agent(db, org, rules=[bad_rule])  # refused when the agent is created...
    bad = make_agent(db, org)
    with db.connection() as conn:  # ...but a rule stored earlier can still meet a changed tool
        bad = agents.update(
            conn, bad.model_copy(update={"tool_rules": [bad_rule]}), expected_version=bad.version
        )
    fake.reply("", call("conversation_search", query="x"))
    fake.reply("", call("core_memory_append", label="human", content="y"))
    turn = send(engine_for(db, fake), bad, "go")
    assert turn.run.stop_reason == "invalid_tool_call" and turn.run.status == "failed"
    assert "must be of type string" in turn.new[-1].tool_returns[0].func_response  # type: ignore[index,operator]
    assert state_of(db, bad)[1]["human"] == "Name: Ada"


def test_auth_error_fails_the_run_and_keeps_input_out_of_context(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    _, _, before = state_of(db, agent)
    fake.fail(401, "bad key")
    turn = send(engine_for(db, fake), agent, "hi")
    assert turn.run.status == "failed" and turn.run.stop_reason == "llm_api_error"
    assert "bad key" in (turn.run.error or {})["message"]
    assert turn.roles == ["user"]  # kept as recall
    _fresh, _, context = state_of(db, agent)
    assert [m.id for m in context] == [m.id for m in before]
    # the agent is free again: the next message runs
    fake.reply("back")
    assert send(engine_for(db, fake), agent, "again").run.stop_reason == "end_turn"
    with db.connection() as conn:
        assert steps.step_at(conn, org.id, turn.run.id, 0).status == "failed"  # type: ignore[union-attr]


def test_a_runs_duration_covers_its_last_step(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    """The run ends when its last step does: a one-step run took at least its model call."""
    engine = engine_for(db, fake)
    agent = make_agent(db, org)
    fake.reply("Slowly.", delay=0.4)
    turn = send(engine, agent, "take your time")
    assert turn.run.status == "completed" and turn.run.completed_at is not None
    assert turn.run.total_duration_ns is not None and turn.run.total_duration_ns >= 0.4e9
    assert turn.run.completed_at >= turn.run.created_at + timedelta(seconds=0.4)
