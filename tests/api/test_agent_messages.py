"""Letta's multi-agent tools through the whole stack: an agent messages another and waits
for its reply, messages the agents with matching tags, or sends without waiting, delivered
exactly once however the sender's step dies and comes again."""

from __future__ import annotations

import ast
import threading
from typing import Any

import pytest
from letta_client import Letta

from cairn import faults
from cairn.domain.messages import Message, TextContent
from cairn.domain.runs import TERMINAL_RUN_STATUSES, RunOptions
from cairn.faults import SimulatedCrash
from cairn.run.driving import lifecycle, worker
from cairn.run.driving.dispatch import sweep
from cairn.run.driving.lifecycle import StartedRun
from cairn.run.driving.sending import Messenger
from cairn.store import messages, outbox, runs
from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.api.test_custom_tools import tool_return
from tests.fakes.llm_server import Recorded, Reply, call
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
TOOLS = [
    "send_message_to_agent_async",
    "send_message_to_agent_and_wait_for_reply",
    "send_message_to_agents_matching_tags",
]


def make(client: Letta, name: str, tags: list[str] | None = None) -> Any:
    return client.agents.create(
        name=name,
        llm_config=LLM,
        tools=TOOLS,
        tags=tags or [],  # type: ignore[arg-type]
        memory_blocks=[{"label": "persona", "value": f"I am {name}."}],
    )


def speaks(name: str) -> Any:
    return lambda r: f"I am {name}." in r.system_text()


def runs_of(stack: Stack, agent_id: str) -> list[Any]:
    with stack.runtime.db.connection() as conn:
        return runs.list_runs(conn, stack.org_id, agent_ids=[agent_id])


def inputs_of(stack: Stack, agent_id: str) -> list[Message]:
    with stack.runtime.db.connection() as conn:
        found = messages.list_for_agent(conn, stack.org_id, agent_id, order="asc")
    return [m for m in found if m.role == "system" and m.name]


def test_a_sender_waits_for_the_other_agent_s_reply(stack: Stack) -> None:
    client = stack.client()
    ada, bob = make(client, "ada"), make(client, "bob")
    stack.fake.reply("", call(TOOLS[1], message="What time is it?", other_agent_id=bob.id))
    stack.fake.reply("It is noon.")  # bob's turn, run here while ada's step waits
    stack.fake.reply("Bob says noon.")
    response = client.agents.messages.create(ada.id, input="ask bob the time")
    returned = tool_return(response)
    assert returned.status == "success"  # type: ignore[attr-defined]
    # Letta's answer is Python's text of {agent_id, response}.
    assert ast.literal_eval(returned.tool_return) == {  # type: ignore[attr-defined]
        "agent_id": bob.id,
        "response": ["It is noon."],
    }
    told = stack.fake.requests[1]
    assert speaks("bob")(told) and told.last_text() == (
        f"[Incoming message from agent with ID '{ada.id}' - to reply to this message, make "
        "sure to use the 'send_message' at the end, and the system will notify the sender of "
        "your response] What time is it?"
    )
    [bob_run] = runs_of(stack, bob.id)
    assert bob_run.metadata["run_type"] == "agent_send_message_to_agent"
    assert bob_run.metadata["sender_agent_id"] == ada.id
    assert [m.name for m in inputs_of(stack, bob.id)] == ["ada"]


def test_a_missing_agent_or_oneself_is_an_error_the_model_reads(stack: Stack) -> None:
    client = stack.client()
    ada, other = make(client, "ada"), make(stack_other_org_client(stack), "eve")
    for target in (other.id, ada.id):  # another organization's agent; the sender itself
        stack.fake.reply("", call(TOOLS[1], message="hi", other_agent_id=target))
        stack.fake.reply("I could not reach them.")
        returned = tool_return(client.agents.messages.create(ada.id, input="ask"))
        assert returned.status == "error"  # type: ignore[attr-defined]
    assert runs_of(stack, other.id) == [] and len(runs_of(stack, ada.id)) == 2
    assert "not found" in tool_return_text(stack, ada.id, 0)


def tool_return_text(stack: Stack, agent_id: str, n: int) -> str:
    with stack.runtime.db.connection() as conn:
        found = messages.list_for_agent(conn, stack.org_id, agent_id, order="asc")
    return [m.text for m in found if m.role == "tool"][n]


def stack_other_org_client(stack: Stack) -> Letta:
    from cairn.domain import Organization, User
    from cairn.store import tenancy

    with stack.runtime.db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="other"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="eve"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="other")
    return Letta(base_url=stack.url, api_key=key, max_retries=0, timeout=30)


def test_agents_matching_tags_each_answer_in_turn(stack: Stack) -> None:
    client = stack.client()
    ada = make(client, "ada", ["team"])
    bob, cy = make(client, "bob", ["team", "ops"]), make(client, "cy", ["team", "dev"])
    make(client, "dan", ["ops"])  # lacks "team"
    stack.fake.when(speaks("bob"), Reply(text="Bob here."))
    stack.fake.when(speaks("cy"), Reply(text="Cy here."))
    stack.fake.reply(
        "", call(TOOLS[2], message="Roll call", match_all=["team"], match_some=["ops", "dev"])
    )
    stack.fake.when(speaks("ada"), Reply(text="Everyone answered."))
    returned = tool_return(client.agents.messages.create(ada.id, input="roll call"))
    answers = ast.literal_eval(returned.tool_return)  # type: ignore[attr-defined]
    expected = {bob.id: ["Bob here."], cy.id: ["Cy here."]}
    assert {a["agent_id"]: a["response"] for a in answers} == expected
    assert [a["agent_id"] for a in answers] == sorted(expected)  # Letta's order: by id
    told = next(r for r in stack.fake.requests if speaks("bob")(r))
    assert told.last_text().startswith("[Incoming message from external Letta agent")


def test_an_async_send_starts_one_run_and_the_sender_goes_on(stack: Stack) -> None:
    client = stack.client()
    ada, bob = make(client, "ada"), make(client, "bob")
    stack.fake.when(speaks("bob"), Reply(text="Noted."))
    stack.fake.reply("", call(TOOLS[0], message="FYI: deploy at 5", other_agent_id=bob.id))
    stack.fake.when(speaks("ada"), Reply(text="Told bob."))
    returned = tool_return(client.agents.messages.create(ada.id, input="tell bob"))
    assert returned.tool_return == "Successfully sent message"  # type: ignore[attr-defined]
    eventually(lambda: any(r.status in TERMINAL_RUN_STATUSES for r in runs_of(stack, bob.id)))
    [bob_run] = runs_of(stack, bob.id)
    assert bob_run.status == "completed" and bob_run.background
    [told] = inputs_of(stack, bob.id)
    assert told.name == "ada" and told.text == (
        f"[Incoming message from agent with ID '{ada.id}' - to reply to this message, make "
        "sure to use the 'send_message_to_agent_async' tool, or the agent will not receive "
        "your message] FYI: deploy at 5"
    )


def ada_pings_bob(stack: Stack, tool: str, answer: str) -> tuple[Any, StartedRun]:
    """Ada's run, started but not stepped, whose model calls `tool` to ping bob."""
    client = stack.client()
    ada, bob = make(client, "ada"), make(client, "bob")
    stack.fake.when(speaks("bob"), Reply(text=answer))
    stack.fake.reply("", call(tool, message="ping", other_agent_id=bob.id))
    stack.fake.when(speaks("ada"), Reply(text="Done."))
    hello = Message(
        organization_id=stack.org_id,
        agent_id=ada.id,
        role="user",
        content=[TextContent(text="ping bob")],
    )
    return bob, lifecycle.start_run(stack.runtime.db, stack.org_id, ada.id, [hello], RunOptions())


@pytest.mark.parametrize("point", ["before_commit", "after_commit"])
def test_an_async_send_is_delivered_once_whatever_dies(stack: Stack, point: str) -> None:
    """The sender's step dies (before its checkpoint, or after it before publishing) and is
    delivered again; the sweeper publishes what was left; the message is delivered twice
    more for good measure. The other agent gets it once."""
    rt = stack.runtime
    bob, started = ada_pings_bob(stack, TOOLS[0], "Noted.")
    with faults.crash_at(point), pytest.raises(SimulatedCrash):  # type: ignore[arg-type]
        rt.engine.step(stack.org_id, started.run.id, 0)
    again = rt.engine.step(stack.org_id, started.run.id, 0)
    assert again.status == ("committed" if point == "before_commit" else "already_done")
    with rt.db.connection() as conn:
        rows = [
            c for c in outbox.claim_unsent(conn, older_than_seconds=0) if c.kind == "agent_message"
        ]
    assert len(rows) == 1  # written once, by the checkpoint that committed
    sweep(rt.db, rt.queue, older_than_seconds=0)  # what a crash left unsent goes out
    for _ in range(2):
        worker.run_step(rt, rows[0].payload)  # the queue delivers it again
    eventually(lambda: any(r.status in TERMINAL_RUN_STATUSES for r in runs_of(stack, bob.id)))
    assert len(runs_of(stack, bob.id)) == 1 and len(inputs_of(stack, bob.id)) == 1
    assert sum(1 for r in stack.fake.requests if speaks("bob")(r)) == 1


def test_a_waiting_send_whose_step_dies_does_not_ask_twice(stack: Stack) -> None:
    """The sender's step dies after bob answered, before its checkpoint: delivered again, it
    reads the journaled reply; bob's turn is not run again."""
    rt = stack.runtime
    bob, started = ada_pings_bob(stack, TOOLS[1], "Pong.")
    reached = []

    def second_commit() -> None:  # bob's step commits first (run here), then ada's would
        reached.append(1)
        if len(reached) == 2:
            raise SimulatedCrash("before_commit")

    messenger = Messenger(rt)  # as the worker hands it to each step
    with faults.run_at("before_commit", second_commit, times=2), pytest.raises(SimulatedCrash):
        rt.engine.step(stack.org_id, started.run.id, 0, messenger=messenger)
    again = rt.engine.step(stack.org_id, started.run.id, 0, messenger=messenger)
    assert again.status == "committed"
    assert len(runs_of(stack, bob.id)) == 1
    assert sum(1 for r in stack.fake.requests if speaks("bob")(r)) == 1
    with rt.db.connection() as conn:
        said = messages.for_runs(conn, stack.org_id, [started.run.id])
    [returned] = [m for m in said if m.role == "tool"]
    assert "Pong." in returned.text


def test_recorded_requests_name_their_agent(stack: Stack) -> None:
    """The rules above tell agents apart by their persona in the system prompt."""
    client = stack.client()
    ada = make(client, "ada")
    stack.fake.reply("hi")
    client.agents.messages.create(ada.id, input="hello")
    request: Recorded = stack.fake.requests[-1]
    assert speaks("ada")(request) and not speaks("bob")(request)


def test_a_reply_that_does_not_come_in_time_ends_the_wait_not_the_turn(db: Database) -> None:
    """Bob's model hangs: ada's wait ends at CAIRN_AGENT_REPLY_SECONDS with an error she
    reads, her turn ends, and bob's run goes on from the queue to its own end."""
    with make_stack(db, agent_reply_seconds=1) as stack:
        client = stack.client()
        ada, bob = make(client, "ada"), make(client, "bob")
        slow = threading.Event()
        stack.fake.when(speaks("bob"), Reply(text="Late.", gate=slow))
        stack.fake.reply("", call(TOOLS[1], message="ping", other_agent_id=bob.id))
        stack.fake.when(speaks("ada"), Reply(text="Bob is slow."))
        returned = tool_return(client.agents.messages.create(ada.id, input="ping bob"))
        shown = ast.literal_eval(returned.tool_return)  # type: ignore[attr-defined]
        assert shown["type"] == "TimeoutError" and shown["agent_id"] == bob.id
        [bob_run] = runs_of(stack, bob.id)
        assert bob_run.id in shown["error"]
        slow.set()
        eventually(lambda: runs_of(stack, bob.id)[0].status in TERMINAL_RUN_STATUSES)
        assert runs_of(stack, bob.id)[0].status == "completed"
