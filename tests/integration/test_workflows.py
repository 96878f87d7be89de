"""The approval and sleeptime workflows, executed by moto's Step Functions from the ASL the
CDK constructs synthesise, their Tasks calling functions/approval and functions/sleeptime,
steps going through SQS to functions/step: the local stack's wiring, with short timings."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import pytest

from cairn.adapters.aws.stepfunctions import execution_name
from cairn.assembly.build import use_runtime
from cairn.config import Settings
from cairn.domain import Agent, Organization, User
from cairn.domain.messages import ApprovalDecision, Message
from cairn.domain.runs import TERMINAL_RUN_STATUSES, Run, RunOptions
from cairn.domain.tool_rules import RequiresApprovalToolRule
from cairn.errors import ConflictError, InvalidArgumentError
from cairn.local.__main__ import start_workers
from cairn.local.http import make_server
from cairn.run.driving import sending, tasks
from cairn.run.runtime import Runtime
from cairn.run.sleeptime import provision_helper, provision_sleeptime
from cairn.store import groups, messages, runs, tenancy
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM, Recorded, Reply, call
from tests.integration.engine_harness import NOW, make_agent, state_of, user
from tests.waiting import eventually

T = TypeVar("T")
APPROVAL_TIMEOUT = 3
RULES = [RequiresApprovalToolRule(tool_name="core_memory_append")]


@dataclass
class Flows:
    rt: Runtime
    fake: FakeLLM
    url: str

    @property
    def sfn(self) -> Any:
        return self.rt.workflows.client  # type: ignore[attr-defined]

    def execution(self, kind: str, dedup_key: str) -> dict[str, Any] | None:
        arn = getattr(self.rt.settings, f"{kind}_state_machine_arn")
        name = execution_name(dedup_key)
        for found in self.sfn.list_executions(stateMachineArn=arn)["executions"]:
            if found["name"] == name:
                return dict(self.sfn.describe_execution(executionArn=found["executionArn"]))
        return None

    def executions(self, kind: str) -> list[dict[str, Any]]:
        arn = getattr(self.rt.settings, f"{kind}_state_machine_arn")
        return list(self.sfn.list_executions(stateMachineArn=arn)["executions"])

    def states(self, execution_arn: str) -> list[str]:
        events = self.sfn.get_execution_history(executionArn=execution_arn)["events"]
        return [
            e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
        ]

    def finished(self, kind: str, dedup_key: str, timeout: float = 30) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            found = self.execution(kind, dedup_key)
            return found if found and found["status"] != "RUNNING" else None

        return eventually(done, timeout)

    def run(self, org_id: str, run_id: str) -> Run:
        with self.rt.db.connection() as conn:
            found = runs.get_run(conn, org_id, run_id)
        assert found is not None
        return found

    def ended(self, org_id: str, run_id: str, timeout: float = 30) -> Run:
        return eventually(
            lambda: (r := self.run(org_id, run_id)).status in TERMINAL_RUN_STATUSES and r, timeout
        )


@pytest.fixture(scope="module")
def flows(pg_dsn: str) -> Iterator[Flows]:
    saved = dict(os.environ)
    with FakeLLM() as fake:
        settings = Settings(
            openai_api_key="sk-test",
            openai_base_url=f"{fake.base_url}/v1",
            llm_max_retries=0,
            sync_budget_seconds=20,
        )
        timings = {
            "approval_timeout_seconds": APPROVAL_TIMEOUT,
            "sleeptime_run_timeout_seconds": 30,
            "retry_seconds": 1,
        }
        workers = start_workers(pg_dsn, settings=settings, timings=timings, sweep_every_seconds=1)
        server = make_server("127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        host, port = server.server_address[:2]
        try:
            yield Flows(workers.runtime, fake, f"http://{host!s}:{port}")
        finally:
            server.shutdown()
            server.server_close()
            workers.stop()
            use_runtime(None)
            os.environ.clear()
            os.environ.update(saved)


@pytest.fixture
def fresh(flows: Flows, db: Database) -> Flows:
    flows.fake.reset()
    return flows


def api(flows: Flows, db: Database, org: Organization, user_: User) -> httpx.Client:
    with db.transaction() as conn:
        _, key = tenancy.create_api_key(conn, org.id, user_.id, name="workflows")
    return httpx.Client(base_url=flows.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


# -- approvals ------------------------------------------------------------------------


def ask(flows: Flows, db: Database, org: Organization) -> tuple[Agent, Run, Message]:
    """A turn that stops at an approval; returns once the workflow holds the token."""
    agent = make_agent(db, org, rules=RULES)
    flows.fake.reply("", call("core_memory_append", label="human", content="Likes: tea"))
    run = sending.send(
        flows.rt,
        org.id,
        agent.id,
        [user(agent, "remember I like tea")],
        RunOptions(max_steps=10),
        wait=True,
    ).run
    assert run.stop_reason == "requires_approval"
    eventually(lambda: flows.run(org.id, run.id).approval_task_token)
    execution = flows.execution("approval", f"{run.id}:approval")
    assert execution is not None and execution["status"] == "RUNNING"
    with flows.rt.db.connection() as conn:
        request = messages.list_for_agent(conn, org.id, agent.id, run_id=run.id, order="asc")[-1]
    assert request.role == "approval"
    return agent, run, request


def answer(agent: Agent, *decisions: ApprovalDecision) -> Message:
    return Message(
        organization_id=agent.organization_id,
        agent_id=agent.id,
        role="approval",
        approvals=list(decisions),
    )


def tool_text(flows: Flows, agent: Agent, run_id: str) -> str:
    with flows.rt.db.connection() as conn:
        found = messages.list_for_agent(
            conn, agent.organization_id, agent.id, run_id=run_id, order="asc"
        )
    return "\n".join(m.text for m in found if m.role == "tool")


def test_approve_hands_the_token_back_and_the_workflow_queues_the_step(
    fresh: Flows, db: Database, org: Organization, user: User
) -> None:
    agent, run, request = ask(fresh, db, org)
    (pending,) = request.tool_calls or []
    fresh.fake.reply("Saved!")
    approve = ApprovalDecision(tool_call_id=pending.id, approve=True)
    continuation = sending.send(
        fresh.rt, org.id, agent.id, [answer(agent, approve)], RunOptions(max_steps=10), wait=False
    ).run
    # a second answer to the same request, before the first has run a step
    with pytest.raises(ConflictError, match="already answered"):
        sending.send(
            fresh.rt,
            org.id,
            agent.id,
            [answer(agent, approve)],
            RunOptions(max_steps=10),
            wait=False,
        )
    assert fresh.ended(org.id, continuation.id).stop_reason == "end_turn"
    execution = fresh.finished("approval", f"{run.id}:approval")
    assert execution["status"] == "SUCCEEDED"
    output = json.loads(execution["output"])
    assert output["answer"] == {"run_id": continuation.id}
    assert output["continued"] == {"queued": True}  # the workflow published the first step
    assert fresh.states(execution["executionArn"]) == [
        "WaitForAnswer",
        "QueueContinuation",
        "Answered",
    ]
    assert state_of(db, agent)[1]["human"] == "Name: Ada\nLikes: tea"
    # and over HTTP, a third answer is refused as Letta refuses it: 400, its words
    with api(fresh, db, org, user) as client:
        again = client.post(
            f"/v1/agents/{agent.id}/messages",
            json={
                "messages": [
                    {
                        "type": "approval",
                        "approvals": [
                            {"type": "approval", "tool_call_id": pending.id, "approve": True}
                        ],
                    }
                ]
            },
        )
    assert again.status_code == 400
    assert "No tool call is currently awaiting approval" in again.text


def test_deny_over_http_runs_in_the_request_and_ends_the_wait(
    fresh: Flows, db: Database, org: Organization, user: User
) -> None:
    agent, run, request = ask(fresh, db, org)
    (pending,) = request.tool_calls or []
    fresh.fake.reply("Fine, I won't.")
    with api(fresh, db, org, user) as client:
        deny = {
            "type": "approval",
            "tool_call_id": pending.id,
            "approve": False,
            "reason": "not now",
        }
        body = {"messages": [{"type": "approval", "approvals": [deny]}]}
        reply = client.post(f"/v1/agents/{agent.id}/messages", json=body)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["stop_reason"]["stop_reason"] == "end_turn"
    returns = [m for m in body["messages"] if m["message_type"] == "tool_return_message"]
    assert "User reason: not now" in returns[0]["tool_return"]
    execution = fresh.finished("approval", f"{run.id}:approval")
    assert execution["status"] == "SUCCEEDED"
    assert json.loads(execution["output"])["continued"] == {"queued": False}  # ran inline
    assert state_of(db, agent)[1]["human"] == "Name: Ada"


def test_no_answer_in_time_denies_with_the_reason_and_the_agent_goes_on(
    fresh: Flows, db: Database, org: Organization
) -> None:
    started = time.monotonic()
    agent, run, _ = ask(fresh, db, org)
    fresh.fake.reply("No answer came, so I left it.")
    execution = fresh.finished("approval", f"{run.id}:approval", timeout=APPROVAL_TIMEOUT + 20)
    assert time.monotonic() - started >= APPROVAL_TIMEOUT
    assert fresh.states(execution["executionArn"]) == ["WaitForAnswer", "DenyOnTimeout", "TimedOut"]
    denied = json.loads(execution["output"])["timeout"]
    assert denied["denied"] is True
    ended = fresh.ended(org.id, denied["run_id"])
    assert ended.stop_reason == "end_turn" and ended.metadata["run_type"] == "approval_timeout"
    text = tool_text(fresh, agent, ended.id)
    assert f"No answer to the approval request within {APPROVAL_TIMEOUT} seconds" in text
    assert state_of(db, agent)[1]["human"] == "Name: Ada"
    # the request is closed: a late answer is refused
    with pytest.raises(InvalidArgumentError, match="No tool call is currently awaiting"):
        sending.send(
            fresh.rt,
            org.id,
            agent.id,
            [answer(agent, ApprovalDecision(tool_call_id="whatever", approve=True))],
            RunOptions(max_steps=10),
            wait=False,
        )


def test_a_client_side_tool_return_answers_the_request(
    fresh: Flows, db: Database, org: Organization
) -> None:
    agent, run, request = ask(fresh, db, org)
    (pending,) = request.tool_calls or []
    fresh.fake.reply("Got it from your side.")
    ran_by_client = ApprovalDecision(
        type="tool", tool_call_id=pending.id, tool_return="stored on the client", status="success"
    )
    continuation = sending.send(
        fresh.rt,
        org.id,
        agent.id,
        [answer(agent, ran_by_client)],
        RunOptions(max_steps=10),
        wait=True,
    ).run
    assert continuation.stop_reason == "end_turn"
    assert "stored on the client" in tool_text(fresh, agent, continuation.id)
    assert state_of(db, agent)[1]["human"] == "Name: Ada"  # the server did not run the tool
    execution = fresh.finished("approval", f"{run.id}:approval")
    assert fresh.states(execution["executionArn"])[-1] == "Answered"


def test_cancel_while_waiting_ends_the_wait(
    fresh: Flows, db: Database, org: Organization, user: User
) -> None:
    agent, run, _ = ask(fresh, db, org)
    with api(fresh, db, org, user) as client:
        cancelled = client.post(f"/v1/agents/{agent.id}/messages/cancel").json()
    assert cancelled == {run.id: "cancelled"}
    execution = fresh.finished("approval", f"{run.id}:approval")
    assert execution["status"] == "SUCCEEDED"
    assert fresh.states(execution["executionArn"]) == ["WaitForAnswer", "Cancelled"]
    stored = fresh.run(org.id, run.id)
    assert stored.status == "cancelled" and stored.approval_task_token is None
    assert len(fresh.fake.requests) == 1  # nothing ran while waiting, nothing after


# -- sleeptime ------------------------------------------------------------------------


def is_helper(request: Recorded) -> bool:
    return any("<system-reminder>" in json.dumps(m) for m in request.body["messages"])


def helper_replies(
    facts: list[str], *, delay: float = 0.0, fail_first: bool = False
) -> Callable[[Recorded], Reply]:
    """Each sleeptime agent inserts the next fact into `human`, then finishes its edits."""
    lock, served = threading.Lock(), {"n": 0}

    def reply(request: Recorded) -> Reply:
        if request.body["messages"][-1]["role"] == "tool":
            return Reply(tool_calls=[call("memory_finish_edits")])
        with lock:
            n = served["n"]
            served["n"] += 1
        if fail_first and n == 0:
            return Reply(status=400, error="this sleeptime agent's model refuses")
        insert = call("memory_insert", label="human", new_str=facts[n % len(facts)])
        return Reply(tool_calls=[insert], delay=delay)

    return reply


class Primary:
    """Scripted replies for the primary agent only (the queue would serve any caller)."""

    def __init__(self, fake: FakeLLM) -> None:
        self.replies: list[Reply] = []
        self.lock = threading.Lock()
        fake.when(lambda r: not is_helper(r), self.next)

    def reply(self, text: str = "", *calls: tuple[str, dict[str, Any]]) -> None:
        with self.lock:
            self.replies.append(Reply(text=text, tool_calls=list(calls)))

    def next(self, request: Recorded) -> Reply:
        with self.lock:
            if self.replies:
                return self.replies.pop(0)
        return Reply(status=500, error="no scripted reply for the primary")


def sleeptime_agent(db: Database, org: Organization, helpers: int = 1) -> tuple[Agent, str]:
    # Letta's sleeptime primaries leave memory to the sleeptime agents; this one may edit too.
    primary = make_agent(db, org, enable_sleeptime=True, tool_names=["core_memory_append"])
    group = provision_sleeptime(db, primary, now=NOW)
    for n in range(1, helpers):
        extra = provision_helper(db, primary, now=NOW, suffix=f"-{n + 1}")
        with db.connection() as conn:
            conn.execute(
                groups.INSERT_MEMBERS,
                {"group_id": group.id, "agent_ids": [extra.id], "org": org.id},
            )
    return primary, group.id


def turn(flows: Flows, primary: Agent, text: str) -> Run:
    run = sending.send(
        flows.rt,
        primary.organization_id,
        primary.id,
        [user(primary, text)],
        RunOptions(max_steps=10),
        wait=True,
    ).run
    assert run.status == "completed", run.error
    return run


def test_sleeptime_fans_out_and_no_shared_block_edit_is_lost(
    fresh: Flows, db: Database, org: Organization, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="cairn.run.steps.step")
    primary, group_id = sleeptime_agent(db, org, helpers=2)
    fresh.fake.when(is_helper, helper_replies(["Fact A", "Fact B"], delay=1.5))
    script = Primary(fresh.fake)
    script.reply("Noted.")
    first = turn(fresh, primary, "I like tea")  # turn 1: the counter hits 0, the fan-out starts
    # while the first sleeptime agent waits on its model, the primary edits the same block
    eventually(lambda: any(is_helper(r) for r in fresh.fake.requests))
    script.reply("", call("core_memory_append", label="human", content="Lives in Oslo"))
    script.reply("Saved.")
    turn(fresh, primary, "I live in Oslo")
    execution = fresh.finished("sleeptime", f"sleeptime:{group_id}:{first.id}", timeout=60)
    assert execution["status"] == "SUCCEEDED"
    human = state_of(db, primary)[1]["human"]
    for line in ("Name: Ada", "Lives in Oslo", "Fact A", "Fact B"):
        assert line in human  # every writer's edit survived
    assert "conflicted" in caplog.text  # a sleeptime checkpoint lost the version check, retried
    with db.connection() as conn:
        group = groups.get(conn, org.id, group_id)
        helper_runs = [
            r
            for a in group.agent_ids
            if a != primary.id  # type: ignore[union-attr]
            for r in runs.list_runs(conn, org.id, agent_ids=[a])
        ]
    assert group is not None and group.last_processed_message_id == first_last_message(db, first)
    assert sorted(r.stop_reason or "" for r in helper_runs) == ["end_turn", "end_turn"]
    transcript = next(r for r in fresh.fake.requests if is_helper(r)).last_text()
    assert (
        transcript.startswith("<system-reminder>") and "Messages:\nuser: I like tea" in transcript
    )
    assert "assistant: Noted." in transcript


def first_last_message(db: Database, run: Run) -> str:
    with db.connection() as conn:
        new = messages.list_for_agent(
            conn, run.organization_id, run.agent_id, run_id=run.id, order="asc"
        )
    return new[-1].id


def test_one_failing_sleeptime_agent_fails_neither_the_others_nor_the_primary(
    fresh: Flows, db: Database, org: Organization
) -> None:
    primary, group_id = sleeptime_agent(db, org, helpers=2)
    fresh.fake.when(is_helper, helper_replies(["Fact A"], fail_first=True))
    script = Primary(fresh.fake)
    script.reply("Noted.")
    first = turn(fresh, primary, "I like tea")
    execution = fresh.finished("sleeptime", f"sleeptime:{group_id}:{first.id}", timeout=60)
    assert execution["status"] == "SUCCEEDED"
    states = fresh.states(execution["executionArn"])
    assert states.count("RunSleeptimeAgent") == 2 and states.count("AgentFailed") == 1
    assert states[-1] == "Finish"
    assert "Fact A" in state_of(db, primary)[1]["human"]
    script.reply("Still here.")
    assert turn(fresh, primary, "hello again").stop_reason == "end_turn"


def test_sleeptime_runs_every_frequency_turns(
    fresh: Flows, db: Database, org: Organization
) -> None:
    primary, group_id = sleeptime_agent(db, org)
    with db.connection() as conn:
        conn.execute("UPDATE groups SET sleeptime_agent_frequency = 2 WHERE id = %s", (group_id,))
    fresh.fake.when(is_helper, helper_replies(["Fact A", "Fact B", "Fact C"]))
    script = Primary(fresh.fake)
    turns = []
    for n in range(5):
        script.reply(f"Reply {n}.")
        turns.append(turn(fresh, primary, f"message {n}"))
    # Letta's counter starts at -1: turns 1, 3 and 5 start the fan-out
    started = {e["name"] for e in fresh.executions("sleeptime")}
    expected = [execution_name(f"sleeptime:{group_id}:{t.id}") for t in turns]
    assert [name in started for name in expected] == [True, False, True, False, True]
    for n in (0, 2, 4):
        fresh.finished("sleeptime", f"sleeptime:{group_id}:{turns[n].id}", timeout=60)
    with db.connection() as conn:
        group = groups.get(conn, org.id, group_id)
    assert group is not None and group.turns_counter == 0
    assert group.last_processed_message_id == first_last_message(db, turns[4])
    # each sleeptime run read the lines after the previous fan-out's, whichever ran first
    transcripts = sorted(
        r.last_text().split("Messages:\n")[1]
        for r in fresh.fake.requests
        if is_helper(r) and r.body["messages"][-1]["role"] != "tool"
    )
    assert transcripts == [
        "user: message 0\nassistant: Reply 0.",
        "user: message 1\nassistant: Reply 1.\nuser: message 2\nassistant: Reply 2.",
        "user: message 3\nassistant: Reply 3.\nuser: message 4\nassistant: Reply 4.",
    ]


def fanned_out(
    fresh: Flows, db: Database, org: Organization
) -> tuple[Agent, dict[str, Any], dict[str, Any]]:
    """A sleeptime agent's first turn, its fan-out finished (the helper noted "Fact A"), and
    that fan-out planned again: the primary, the plan and its one item, to send again."""
    primary, group_id = sleeptime_agent(db, org)
    fresh.fake.when(is_helper, helper_replies(["Fact A"]))
    Primary(fresh.fake).reply("Noted.")
    first = turn(fresh, primary, "I like tea")
    fresh.finished("sleeptime", f"sleeptime:{group_id}:{first.id}", timeout=60)
    plan = {
        "organization_id": org.id,
        "action": "plan",
        "group_id": group_id,
        "upto_message_id": first_last_message(db, first),
    }
    (item,) = tasks.sleeptime_task(fresh.rt, plan)["items"]
    return primary, plan, item


def test_a_sleeptime_item_sent_twice_starts_its_run_once(
    fresh: Flows, db: Database, org: Organization
) -> None:
    """Step Functions retries a failed Task, and a fan-out lost with the local stack is sent
    again after its restart: the item's run is found, not started a second time."""
    primary, plan, item = fanned_out(fresh, db, org)
    again = tasks.sleeptime_task(fresh.rt, {**plan, "action": "run", "item": item})
    with db.connection() as conn:
        helper_runs = runs.list_runs(conn, org.id, agent_ids=[item["agent_id"]])
    assert [r.id for r in helper_runs] == [again["run_id"]]
    assert state_of(db, primary)[1]["human"].count("Fact A") == 1


def test_a_spent_budget_skips_a_sleeptime_run_and_fails_no_workflow(
    fresh: Flows, db: Database, org: Organization
) -> None:
    """A fan-out item whose organization spent its monthly budget starts no background run
    and answers its Task as skipped (a failure would alarm and retry for nothing)."""
    from cairn.assembly.operator import operate

    _, plan, item = fanned_out(fresh, db, org)
    operate(db, {"action": "limits", "organization_id": org.id, "monthly_tokens": 1})
    later = {**item, "upto_message_id": "message-of-a-later-fan-out"}
    answer = tasks.sleeptime_task(fresh.rt, {**plan, "action": "run", "item": later})
    assert answer == {"run_id": None}
    with db.connection() as conn:
        helper_runs = runs.list_runs(conn, org.id, agent_ids=[item["agent_id"]])
    assert len(helper_runs) == 1  # the first fan-out's, and no other
