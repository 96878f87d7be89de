"""One trace per run, over OTLP, into a receiver this test runs: the local stack started with
the standard OTEL_* variables exports the request's span, the run's, each step's, each model
call's (GenAI attributes), each tool call's and each checkpoint's; a run continues its
caller's `traceparent`, and a run killed mid-step and finished by the restarted stack is
still one trace (its context is kept with the run, not in the process)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_crash_recovery import (
    Stack,
    _stop_postgres,
    answers,
    ended,
    human,
    new_agent,
)
from tests.fakes.llm_server import FakeLLM
from tests.fakes.otlp_receiver import OtlpReceiver, Received
from tests.waiting import eventually

SERVER, CLIENT = 2, 3  # the protocol's SpanKind numbers


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[Stack, OtlpReceiver]]:
    with FakeLLM() as fake, OtlpReceiver() as receiver:
        fake.when(lambda _: True, answers)
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_SERVICE_NAME": "cairn-test",
            "OTEL_BSP_SCHEDULE_DELAY": "100",  # exported within a tenth of a second
        }
        made = Stack(tmp_path / "cairn", fake, env)
        try:
            yield made, receiver
        finally:
            made.stop()
            _stop_postgres(tmp_path / "cairn" / "pgdata")


def parent(trace_id: str) -> tuple[str, dict[str, str]]:
    span_id = secrets.token_hex(8)
    return span_id, {"traceparent": f"00-{trace_id}-{span_id}-01"}


def test_a_run_is_one_trace_from_the_request_to_each_checkpoint(
    traced: tuple[Stack, OtlpReceiver],
) -> None:
    stack, receiver = traced
    client = stack.start()
    agent = new_agent(client, "Ada")
    trace_id = secrets.token_hex(16)
    caller, headers = parent(trace_id)
    reply = client.agents.messages.create(
        agent.id, input="remember fact-traced", extra_headers=headers
    )
    assert reply.stop_reason.stop_reason == "end_turn"
    # request, run, two steps, two model calls, two tool calls, two checkpoints; the
    # request's span ends last (after the run's) and may come in a later export.
    route = "POST /v1/agents/{agent_id}/messages"
    spans = eventually(
        lambda: (
            (s := receiver.of_trace(trace_id))
            and len(s) >= 10
            and any(x.name == route for x in s)
            and s
        )
    )
    by_name: dict[str, list[Received]] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    (request,) = by_name[route]
    assert (request.parent_id, request.kind) == (caller, SERVER)
    assert request.attributes["http.response.status_code"] == 200
    assert request.service == "cairn-test"
    (run,) = by_name["run"]
    assert run.parent_id == request.span_id and run.attributes["cairn.agent_id"] == agent.id
    steps = sorted(by_name["step"], key=lambda s: s.attributes["cairn.step_index"])
    assert [s.attributes["cairn.step_index"] for s in steps] == [0, 1]
    assert all(s.parent_id == run.span_id for s in steps)
    assert steps[-1].attributes["cairn.stop_reason"] == "end_turn"
    models = by_name["chat gpt-test"]
    assert sorted(m.parent_id for m in models) == sorted(s.span_id for s in steps)
    for m in models:
        assert m.kind == CLIENT and m.attributes["gen_ai.operation.name"] == "chat"
        assert m.attributes["gen_ai.provider.name"] == "openai"
        assert m.attributes["gen_ai.request.model"] == "gpt-test"
        assert m.attributes["gen_ai.usage.input_tokens"] > 0
        assert m.attributes["gen_ai.usage.output_tokens"] > 0
    finishes = sorted(m.attributes["gen_ai.response.finish_reasons"][0] for m in models)
    assert finishes == ["stop", "tool_calls"]
    tools = by_name["execute_tool memory_insert"] + by_name["execute_tool conversation_search"]
    assert {t.parent_id for t in tools} == {steps[0].span_id}
    assert all(t.attributes["gen_ai.tool.call.id"] for t in tools)
    checkpoints = by_name["checkpoint"]
    assert sorted(c.parent_id for c in checkpoints) == sorted(s.span_id for s in steps)
    # Another request is another trace: nothing of it lands in this one.
    client.agents.retrieve(agent.id)
    assert not any(s.name == "GET /v1/agents/{agent_id}" for s in receiver.of_trace(trace_id))


def test_a_run_killed_mid_step_and_finished_after_a_restart_is_still_one_trace(
    traced: tuple[Stack, OtlpReceiver],
) -> None:
    stack, receiver = traced
    client = stack.start()
    agent = new_agent(client, "Ada")
    stack.stop()
    client = stack.start(crash_at="after_journal")  # the model answered; its tools not run
    trace_id = secrets.token_hex(16)
    _, headers = parent(trace_id)
    run = client.agents.messages.create_async(
        agent.id, input="remember fact-killed", extra_headers=headers
    )
    assert "crashing at after_journal" in stack.killed()
    client = stack.start()
    done = ended(client, run.id)
    assert (done.status, done.stop_reason) == ("completed", "end_turn")
    assert human(client, agent.id).count("fact-killed") == 1

    def steps_of_run() -> list[Received]:
        return [s for s in receiver.named("step") if s.attributes.get("cairn.run_id") == run.id]

    # The restarted stack's steps (the first process may have died before exporting its
    # own): each in the run's trace, the caller's.
    finished = eventually(
        lambda: (
            (found := steps_of_run())
            and any(s.attributes.get("cairn.stop_reason") == "end_turn" for s in found)
            and found
        )
    )
    assert {s.trace_id for s in finished} == {trace_id}
    tools = [s for s in receiver.of_trace(trace_id) if s.name.startswith("execute_tool")]
    assert {t.name for t in tools} >= {"execute_tool memory_insert"}
    # Nothing of this run in any other trace.
    assert not [
        s
        for s in receiver.spans
        if s.attributes.get("cairn.run_id") == run.id and s.trace_id != trace_id
    ]
