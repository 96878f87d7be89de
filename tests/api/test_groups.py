"""Multi-agent groups through letta-client 1.5.0: create, tune, share blocks, talk in turns,
list and edit what was said, reset, delete (contract §10)."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from letta_client import Letta, NotFoundError, UnprocessableEntityError

from cairn.store import agents as agent_rows
from cairn.store import messages as message_rows
from tests.api.conftest import Stack
from tests.fakes.llm_server import Recorded
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
MISSING_AGENT = "agent-00000000-0000-4000-8000-000000000000"


def round_robin(max_turns: int) -> dict[str, object]:
    return {"manager_type": "round_robin", "max_turns": max_turns}


def members(client: Letta, *names: str) -> list[str]:
    return [client.agents.create(name=n, llm_config=LLM).id for n in names]  # type: ignore[arg-type]


def texts(request: Recorded) -> str:
    return "\n".join(str(m.get("content")) for m in request.body["messages"])


def test_a_round_robin_message_runs_each_member_in_turn_on_what_the_others_said(
    stack: Stack,
) -> None:
    client = stack.client()
    ada, bob = members(client, "ada", "bob")
    group = client.groups.create(
        agent_ids=[ada, bob], description="planning", manager_config=round_robin(3)
    )
    assert (group.manager_type, group.agent_ids, group.max_turns) == ("round_robin", [ada, bob], 3)
    stack.fake.reply("Ada: let us meet Monday.")
    stack.fake.reply("Bob: Monday suits me.")
    stack.fake.reply("Ada: settled then.")
    reply = client.groups.messages.create(group.id, messages=[{"role": "user", "content": "When?"}])

    said = [m.content for m in reply.messages if m.message_type == "assistant_message"]
    assert said == ["Ada: let us meet Monday.", "Bob: Monday suits me.", "Ada: settled then."]
    assert reply.stop_reason.stop_reason == "end_turn" and reply.usage.step_count == 3
    first, second, third = stack.fake.requests
    assert "When?" in first.last_text()
    # Bob hears the sender and Ada, named; Ada, speaking again, hears only Bob's reply.
    assert "When?" in texts(second) and "ada: Ada: let us meet Monday." in texts(second)
    assert third.last_text() == "bob: Bob: Monday suits me."
    assert texts(third).count("When?") == 1

    # What was said in the group, listed through the SDK's pager, oldest first.
    listed = list(client.groups.messages.list(group.id, order="asc", limit=2))
    shown = [getattr(m, "content", None) for m in listed]
    assert shown[0] == "When?" and "Bob: Monday suits me." in shown
    runs = {m.run_id for m in listed if m.message_type == "assistant_message"}
    assert len(runs) == 3  # one run per turn


def test_a_group_is_tuned_shares_blocks_and_is_deleted_without_its_agents(stack: Stack) -> None:
    client = stack.client()
    ada, bob, cy = members(client, "ada", "bob", "cy")
    group = client.groups.create(agent_ids=[ada, bob], description="d")
    assert group.manager_type == "round_robin" and group.max_turns is None
    changed = client.groups.update(
        group.id, agent_ids=[cy, ada], description="new", manager_config=round_robin(5)
    )
    assert (changed.agent_ids, changed.description, changed.max_turns) == ([cy, ada], "new", 5)
    with pytest.raises(UnprocessableEntityError, match="cannot change"):
        client.groups.update(
            group.id, manager_config={"manager_type": "sleeptime", "manager_agent_id": ada}
        )

    # letta-client 1.5.0 has no method for these two routes of Letta's OpenAPI.
    block = client.blocks.create(label="plan", value="v")
    path = f"/v1/groups/{group.id}/blocks/%s/{block.id}"
    client.patch(path % "attach", cast_to=object)
    client.patch(path % "attach", cast_to=object)  # twice: no-op
    assert client.groups.retrieve(group.id).shared_block_ids == [block.id]
    client.patch(path % "detach", cast_to=object)
    assert client.groups.retrieve(group.id).shared_block_ids == []
    with pytest.raises(NotFoundError):
        missing = "block-00000000-0000-4000-8000-000000000000"
        client.patch(f"/v1/groups/{group.id}/blocks/attach/{missing}", cast_to=object)

    client.groups.delete(group.id)
    with pytest.raises(NotFoundError):
        client.groups.retrieve(group.id)
    assert {a.id for a in client.agents.list()} >= {ada, bob, cy}


def test_bad_groups_are_refused_naming_what_is_wrong_and_nothing_is_stored(stack: Stack) -> None:
    client = stack.client()
    (ada,) = members(client, "ada")
    with pytest.raises(NotFoundError, match=MISSING_AGENT):
        client.groups.create(agent_ids=[ada, MISSING_AGENT], description="")
    with pytest.raises(UnprocessableEntityError, match="twice"):
        client.groups.create(agent_ids=[ada, ada], description="")
    with pytest.raises(UnprocessableEntityError, match="manager_agent_id"):
        client.groups.create(
            agent_ids=[ada], description="", manager_config={"manager_type": "dynamic"}
        )  # type: ignore[typeddict-item]
    with pytest.raises(UnprocessableEntityError, match="min_message_buffer_length"):
        client.groups.create(
            agent_ids=[ada],
            description="",
            manager_config={
                "manager_type": "voice_sleeptime",
                "manager_agent_id": ada,
                "max_message_buffer_length": 10,
            },
        )
    assert client.get("/v1/groups/count", cast_to=int) == 0  # no SDK method for it

    supervised = client.groups.create(
        agent_ids=[ada],
        description="",
        manager_config={"manager_type": "supervisor", "manager_agent_id": ada},
    )
    with pytest.raises(UnprocessableEntityError, match="supervisor"):
        client.groups.messages.create(supervised.id, messages=[{"role": "user", "content": "hi"}])
    empty = client.groups.create(agent_ids=[], description="")
    with pytest.raises(UnprocessableEntityError, match="no agents"):
        client.groups.messages.create(empty.id, messages=[{"role": "user", "content": "hi"}])
    assert stack.fake.requests == []


def test_reset_removes_the_groups_messages_from_history_and_context(stack: Stack) -> None:
    client = stack.client()
    ada, bob = members(client, "ada", "bob")
    stack.fake.reply("ok")
    client.agents.messages.create(ada, input="a private word")  # not said in the group
    group = client.groups.create(agent_ids=[ada, bob], description="")
    stack.fake.reply("one")
    stack.fake.reply("two")
    client.groups.messages.create(group.id, messages=[{"role": "user", "content": "go"}])
    assert len(list(client.groups.messages.list(group.id))) > 0

    client.groups.messages.reset(group.id)
    assert list(client.groups.messages.list(group.id)) == []
    with stack.runtime.db.connection() as conn:
        for agent_id in (ada, bob):
            agent = agent_rows.get(conn, stack.org_id, agent_id)
            assert agent is not None
            kept = message_rows.get_many(conn, stack.org_id, agent.message_ids)
            assert len(kept) == len(agent.message_ids)  # no id left pointing at nothing
            assert all(m.group_id is None for m in kept)
            count = conn.execute(
                "SELECT count(*) AS n FROM messages WHERE agent_id = %s", (agent_id,)
            ).fetchone()
            assert message_rows.count_for_agent(conn, stack.org_id, agent_id) == count["n"]
    history = [getattr(m, "content", "") for m in client.agents.messages.list(ada)]
    assert "a private word" in history and "go" not in history


def test_a_group_message_is_edited_and_one_outside_the_group_is_not_found(stack: Stack) -> None:
    client = stack.client()
    ada, bob = members(client, "ada", "bob")
    (outsider,) = members(client, "cy")
    group = client.groups.create(
        agent_ids=[ada, bob], description="", manager_config=round_robin(1)
    )
    stack.fake.reply("first draft")
    reply = client.groups.messages.create(group.id, messages=[{"role": "user", "content": "hi"}])
    said = next(m for m in reply.messages if m.message_type == "assistant_message")
    edited = client.groups.messages.update(
        said.id, group_id=group.id, content="final", message_type="assistant_message"
    )
    assert edited.content == "final"  # type: ignore[union-attr]
    stack.fake.reply("elsewhere")
    other = client.agents.messages.create(outsider, input="x").messages[0]
    with pytest.raises(NotFoundError):
        client.groups.messages.update(
            other.id, group_id=group.id, content="no", message_type="user_message"
        )


def test_a_chain_goes_on_in_the_background_past_the_callers_budget(stack: Stack) -> None:
    """Each turn's end starts the next through the outbox, so the turns do not depend on
    the request that sent the message staying (here: a budget that ends after turn one)."""
    client = stack.client()
    ada, bob = members(client, "ada", "bob")
    group = client.groups.create(
        agent_ids=[ada, bob], description="", manager_config=round_robin(4)
    )
    for text in ("a1", "b1", "a2", "b2"):
        stack.fake.reply(text, delay=0.3)
    stack.runtime.settings.sync_budget_seconds = 0.5
    answer = client.groups.messages.with_raw_response.create(
        group.id, messages=[{"role": "user", "content": "go"}]
    )
    assert answer.status_code == 202  # the run under way, to poll

    def said() -> list[str]:
        return [
            m.content
            for m in client.groups.messages.list(group.id, order="asc", limit=50)
            if m.message_type == "assistant_message"
        ]

    def handed_on() -> list[bool]:
        with stack.runtime.db.connection() as conn:
            kinds = conn.execute("SELECT sent_at FROM outbox WHERE kind = 'group_turn'")
            return [r["sent_at"] is not None for r in kinds.fetchall()]

    # The last turn commits in the background.
    eventually(lambda: len(said()) >= 4 and all(handed_on()), pause=0.1)
    assert said() == ["a1", "b1", "a2", "b2"]
    assert handed_on() == [True] * 3


def test_a_sleeptime_group_message_goes_to_its_primary(stack: Stack) -> None:
    client = stack.client()
    primary = client.agents.create(llm_config=LLM, enable_sleeptime=True)  # type: ignore[arg-type]
    assert primary.multi_agent_group is not None
    stack.fake.reply("noted")
    stack.fake.reply("", ("memory_finish_edits", {}))  # the sleeptime agent's turn
    reply = client.groups.messages.create(
        primary.multi_agent_group.id, messages=[{"role": "user", "content": "I like tea"}]
    )
    assert [m.content for m in reply.messages if m.message_type == "assistant_message"] == ["noted"]
    assert reply.messages[0].run_id is not None
    history = client.agents.messages.list(primary.id, order="asc")
    assert "I like tea" in [getattr(m, "content", None) for m in history]


def test_a_group_stream_sends_each_turn_as_it_ends_past_the_sync_budget(stack: Stack) -> None:
    client = stack.client()
    ada, bob, cy = members(client, "ada", "bob", "cy")
    group = client.groups.create(
        agent_ids=[ada, bob, cy], description="plans", manager_config=round_robin(3)
    )
    # A sync send would stop waiting after 0.5 s; a stream follows the chain to its end.
    stack.runtime.settings.sync_budget_seconds = 0.5
    # Bob answers only once Ada's turn has reached the client, Cy once Bob's has: a stream
    # that held the chain back would leave the gates shut until the fake gives up (30 s).
    bob_gate, cy_gate = threading.Event(), threading.Event()
    stack.fake.reply("Ada: Monday.")
    stack.fake.reply("Bob: fine.", delay=1.0, gate=bob_gate)
    stack.fake.reply("Cy: agreed.", gate=cy_gate)
    opens = {"Ada: Monday.": bob_gate, "Bob: fine.": cy_gate}
    seen: list[Any] = []
    said_to = [{"role": "user", "content": "When?"}]
    for event in client.groups.messages.stream(group.id, messages=said_to):  # type: ignore[arg-type]
        seen.append(event)
        if event.message_type == "assistant_message" and event.content in opens:
            opens[event.content].set()
    said = [e.content for e in seen if e.message_type == "assistant_message"]
    assert said == ["Ada: Monday.", "Bob: fine.", "Cy: agreed."]
    assert stack.fake.gates_timed_out == 0  # each turn reached the client before the next answered
    stop, usage = seen[-2], seen[-1]
    assert stop.stop_reason == "end_turn"
    assert usage.step_count == 3  # the chain's, not the last turn's
    # The user's message is not sent back.
    assert not any(e.message_type == "user_message" for e in seen)


def test_a_group_stream_of_a_failing_turn_ends_with_letta_s_error_event(stack: Stack) -> None:
    client = stack.client()
    ada, bob = members(client, "ada", "bob")
    group = client.groups.create(
        agent_ids=[ada, bob], description="greeting", manager_config=round_robin(2)
    )
    stack.fake.reply("Ada: hello.")
    stack.fake.fail(400, "bad request for bob")
    answer = httpx.post(
        f"{stack.url}/v1/groups/{group.id}/messages/stream",
        headers={"Authorization": f"Bearer {stack.key}"},
        json={"messages": [{"role": "user", "content": "hi"}]},
        timeout=30,
    )
    assert answer.status_code == 200
    frames = [f for f in answer.text.split("\n\n") if f]
    assert json.loads(frames[0][6:])["content"] == "Ada: hello."
    assert frames[-2].startswith("event: error\n") and "bad request for bob" in frames[-2]
    assert frames[-1] == "data: [DONE]"
