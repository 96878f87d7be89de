"""Durability: a crash at any point of a step, then a retry, ends as if nothing happened."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cairn import faults
from cairn.assembly.build import engine_ports
from cairn.config import Settings
from cairn.domain import Agent, Organization, OutboxCommand
from cairn.faults import SimulatedCrash
from cairn.jobs.embedding_jobs import backfill
from cairn.run.driving import dispatch
from cairn.run.steps.step import Engine, StepOutcome
from cairn.store import agents, archives, blocks, messages, outbox, runs
from cairn.store import steps as step_rows
from cairn.store.db import Database
from cairn.tools.subprocess_sandbox import SubprocessSandbox
from tests.fakes.llm_server import FakeLLM, Recorded, Reply, call
from tests.integration.engine_harness import (
    drive,
    engine_for,
    finished,
    make_agent,
    send,
    someone_waits_for_a_lock,
    start_run,
    state_of,
    user,
)


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def script(fake: FakeLLM) -> None:
    """Step 0 edits memory and stores a passage (two tools); step 1 answers."""
    fake.reply(
        "",
        call("core_memory_append", label="human", content="Likes: tea"),
        call("archival_memory_insert", content="Ada drinks tea at 5pm", tags=["habits"]),
        usage=(400, 20),
    )
    fake.reply("Noted!", usage=(480, 4))


def snapshot(db: Database, agent: Agent) -> dict[str, Any]:
    _fresh, values, context = state_of(db, agent)
    with db.connection() as conn:
        archive = archives.archive_for_agent(conn, agent.organization_id, agent.id)
        passages = (
            [
                (p.text, p.tags)
                for p in archives.list_passages(conn, agent.organization_id, archive.id)
            ]
            if archive
            else []
        )
        history = messages.list_for_agent(conn, agent.organization_id, agent.id, order="asc")
        all_runs = runs.list_runs(conn, agent.organization_id, agent_ids=[agent.id])
    return {
        "transcript": [_plain(m) for m in context],
        "stored": [_plain(m) for m in history],
        "blocks": values,
        "passages": passages,
        "usage": [r.usage.model_dump() for r in all_runs],
        "status": [(r.status, r.stop_reason) for r in all_runs],
    }


def _plain(m: Any) -> tuple[Any, ...]:
    # The metadata's modification time is the database clock's; everything else must match.
    text = m.text.split("<memory_metadata>")[0] if m.role == "system" else m.text
    return (
        m.role,
        text,
        [(c.function.name, c.function.arguments) for c in m.tool_calls or ()],
        [(r.status, r.func_response) for r in m.tool_returns or ()],
    )


def assert_same(got: dict[str, Any], want: dict[str, Any]) -> None:
    for key in want:
        if isinstance(want[key], list):
            assert len(got[key]) == len(want[key]), key
            for g, w in zip(got[key], want[key], strict=True):
                assert g == w, key
        assert got[key] == want[key], key


def assert_calls_have_returns(db: Database, agent: Agent) -> None:
    _, _, context = state_of(db, agent)
    returned = {r.tool_call_id for m in context for r in m.tool_returns or ()}
    for m in context:
        if m.role == "assistant":
            assert {c.id for c in m.tool_calls or ()} <= returned


@pytest.fixture
def baseline(db: Database, org: Organization) -> dict[str, Any]:
    with FakeLLM() as clean:
        script(clean)
        agent = make_agent(db, org)
        send(engine_for(db, clean, fixed_clock=True), agent, "I like tea")
        assert len(clean.requests) == 2
        return snapshot(db, agent)


@pytest.mark.parametrize(
    "point",
    [
        "before_llm",
        "after_journal",
        "between_tools",
        "before_commit",
        "inside_commit",
        "after_commit",
    ],
)
def test_crash_then_retry_matches_an_uninterrupted_run(
    db: Database, org: Organization, fake: FakeLLM, baseline: dict[str, Any], point: str
) -> None:
    agent = make_agent(db, org)
    script(fake)
    engine = engine_for(db, fake, fixed_clock=True)
    run, command, *_ = start_run(engine, org.id, agent.id, [user(agent, "I like tea")])
    with faults.crash_at(point) as fired, pytest.raises(SimulatedCrash):  # type: ignore[arg-type]
        engine.step(org.id, run.id, 0)
    assert fired == [point]
    assert_calls_have_returns(db, agent)
    # the queue delivers the same step again
    outcomes = drive(engine, command)
    if point == "after_commit":
        assert outcomes[0].status == "already_done" and outcomes[0].next_command is not None
    assert len(fake.requests) == 2, "a journaled response must not be asked for again"
    assert_same(snapshot(db, agent), baseline)


def test_after_commit_crash_is_recovered_by_the_outbox(
    db: Database, org: Organization, fake: FakeLLM, baseline: dict[str, Any]
) -> None:
    agent = make_agent(db, org)
    script(fake)
    engine = engine_for(db, fake, fixed_clock=True)
    run, command, *_ = start_run(engine, org.id, agent.id, [user(agent, "I like tea")])
    with db.connection() as conn:
        outbox.mark_sent(conn, org.id, command.id)  # type: ignore[arg-type]
    with faults.crash_at("after_commit"), pytest.raises(SimulatedCrash):
        engine.step(org.id, run.id, 0)
    # what the sweeper finds: the continuation committed with the step, never published
    with db.connection() as conn:
        unsent = [c for c in outbox.claim_unsent(conn, older_than_seconds=0) if c.run_id == run.id]
    steps = [c for c in unsent if c.kind == "step"]
    assert [c.payload["step_index"] for c in steps] == [1]
    assert [c.kind for c in unsent if c.kind != "step"] == []  # embeddings: the backfill's
    drive(engine, steps[0])
    assert_same(snapshot(db, agent), baseline)
    waiting = _searchable(db, agent)  # nothing else ever embeds them...
    assert waiting and backfill(engine)[0] >= len(waiting)  # (the baseline agent's too)
    assert _searchable(db, agent) == []  # ...until the sweeper's backfill


def test_duplicate_delivery_of_a_committed_step_does_nothing(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    fake.reply("hello")
    engine = engine_for(db, fake)
    turn = send(engine, agent, "hi")
    before = snapshot(db, agent)
    again = engine.step(org.id, turn.run.id, 0)
    assert again.status == "already_done" and again.next_command is None
    assert snapshot(db, agent) == before and len(fake.requests) == 1


def test_a_provider_error_past_the_retry_budget_fails_the_run_once(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    """The SDK's retries are the step's whole budget (0 here): a 503 then ends the run with
    the provider's message, keeps the input out of the context, and a redelivery of the
    step does not ask the provider again."""
    agent = make_agent(db, org)
    fake.fail(503, "overloaded, try later").reply("never asked")
    engine = engine_for(db, fake)
    run, *_ = start_run(engine, org.id, agent.id, [user(agent, "hi")])
    outcome = engine.step(org.id, run.id, 0)
    assert (outcome.run_status, outcome.stop_reason) == ("failed", "llm_api_error")
    assert engine.step(org.id, run.id, 0).status == "already_done"
    assert len(fake.requests) == 1
    with db.connection() as conn:
        ended = runs.get_run(conn, org.id, run.id)
        kept = messages.list_for_agent(conn, org.id, agent.id, run_id=run.id)
        context = agents.get(conn, org.id, agent.id).message_ids  # type: ignore[union-attr]
    assert ended is not None and "overloaded, try later" in ended.error["message"]  # type: ignore[index]
    assert [m.text for m in kept] == ["hi"] and kept[0].id not in context


def test_a_transient_provider_error_within_the_budget_is_retried_by_the_sdk(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    fake.fail(503).reply("recovered")
    settings = engine_for(db, fake).settings.model_copy(update={"llm_max_retries": 1})
    engine = Engine(db, settings, sandbox=SubprocessSandbox(), **engine_ports(settings))
    run, command, *_ = start_run(engine, org.id, agent.id, [user(agent, "hi")])
    turn = finished(engine, run, drive(engine, command))
    assert turn.run.stop_reason == "end_turn" and turn.roles == ["user", "assistant"]
    assert len(fake.requests) == 2


def test_block_edited_mid_step_is_redone_on_fresh_state(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    fake.reply("", call("core_memory_append", label="human", content="Likes: tea"))
    fake.reply("Noted.")
    engine = engine_for(db, fake)

    def person_edits_block() -> None:
        with db.connection() as conn:
            human = blocks.for_agent_by_label(conn, org.id, agent.id, "human")
            assert human is not None
            blocks.update(
                conn,
                human.model_copy(update={"value": "Name: Ada Lovelace"}),
                expected_version=human.version,
            )

    with faults.run_at("before_commit", person_edits_block):
        turn = send(engine, agent, "I like tea")
    assert turn.run.stop_reason == "end_turn"
    # neither edit is lost: the step re-applied the model's append to the person's value
    assert state_of(db, agent)[1]["human"] == "Name: Ada Lovelace\nLikes: tea"
    assert len(fake.requests) == 2  # the retry reused the journaled response


def test_two_runs_racing_on_one_agent_never_interleave(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)

    def last_is_user(r: Recorded) -> bool:
        return r.body["messages"][-1]["role"] == "user"

    # each run: a search (tool step), then an answer; the delay widens the race window
    fake.when(last_is_user, Reply(tool_calls=[("conversation_search", {"query": "x"})], delay=0.2))
    fake.when(lambda r: not last_is_user(r), Reply(text="done", delay=0.2))
    engine = engine_for(db, fake)
    turns: dict[str, Any] = {}

    def run(text: str) -> None:
        turns[text] = send(engine, agent, text)

    threads = [threading.Thread(target=run, args=(t,)) for t in ("A", "B")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert {t.run.stop_reason for t in turns.values()} == {"end_turn"}
    _, _, context = state_of(db, agent)
    owners = [m.run_id for m in context if m.run_id]
    # each run's four messages sit together: one run after the other
    assert owners in (
        [turns["A"].run.id] * 4 + [turns["B"].run.id] * 4,
        [turns["B"].run.id] * 4 + [turns["A"].run.id] * 4,
    )
    # and every request saw a whole, consistent transcript (call followed by its return)
    for r in fake.requests:
        roles = [m["role"] for m in r.body["messages"]]
        for i, role in enumerate(roles):
            if role == "tool":
                assert roles[i - 1] in ("assistant", "tool")


def test_engine_step_of_unknown_run_is_missing(db: Database, org: Organization) -> None:
    engine = Engine(db, Settings(), sandbox=SubprocessSandbox(), **engine_ports(Settings()))
    assert engine.step(org.id, "run-00000000-0000-4000-8000-000000000000", 0).status == "missing"


def test_cancel_landing_mid_step_keeps_the_work_and_goes_no_further(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    fake.reply("", call("core_memory_append", label="human", content="Likes: tea"))
    engine = engine_for(db, fake)
    run, command, *_ = start_run(engine, org.id, agent.id, [user(agent, "I like tea")])
    with faults.run_at("before_commit", lambda: engine.fail_run(org.id, run.id, "cancelled", "")):
        outcomes = drive(engine, command)
    turn = finished(engine, run, outcomes)
    assert turn.run.status == "cancelled" and turn.run.stop_reason == "cancelled"
    assert outcomes[-1].next_command is None and len(fake.requests) == 1
    assert state_of(db, agent)[1]["human"] == "Name: Ada\nLikes: tea"  # the step's work stays
    fake.reply("free again")
    assert send(engine, agent, "hi").run.stop_reason == "end_turn"  # the lease was released


def test_a_cancel_racing_a_checkpoint_waits_for_it_and_never_deadlocks(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    """A checkpoint takes the agent's row (its messages' counts) before the run's; a cancel
    took the run's first, then waited for the checkpoint's copy of the run's input message,
    which both write: each waited for the other, PostgreSQL refused one, and the cancel
    answered 503 (tests/api/test_http_contract.py met it). Here the checkpoint is held
    between the two: the cancel waits for it, then ends the run."""
    from tests.waiting import eventually

    engine = engine_for(db, fake)
    agent = make_agent(db, org)
    run, *_ = start_run(engine, org.id, agent.id, [user(agent, "hi")])
    failed: list[BaseException] = []

    def cancel() -> None:
        try:
            engine.fail_run(org.id, run.id, "cancelled", "cancelled by request")
        except BaseException as err:
            failed.append(err)

    canceller = threading.Thread(target=cancel)
    with db.transaction() as conn:  # a checkpoint: its messages first, then its run
        messages.insert(conn, run.input_messages())
        canceller.start()
        eventually(lambda: someone_waits_for_a_lock(db))
        conn.execute(
            "UPDATE runs SET updated_at = now() WHERE organization_id = %s AND id = %s",
            (org.id, run.id),
        )
    canceller.join(timeout=60)
    assert not canceller.is_alive() and not failed, failed
    with db.connection() as conn:
        ended = runs.get_run(conn, org.id, run.id)
        stored = conn.execute("SELECT count(*) AS n FROM messages WHERE run_id = %s", (run.id,))
        assert stored.fetchone()["n"] == 1  # the input, once
        lease = conn.execute("SELECT lease_run_id FROM agents WHERE id = %s", (agent.id,))
        assert lease.fetchone()["lease_run_id"] is None
    assert ended is not None and ended.status == "cancelled"


def test_a_step_whose_run_was_cancelled_and_deleted_meanwhile_keeps_nothing(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    # Its rows keep no key to the run (migration 0042): the checkpoint finds the run gone.
    agent = make_agent(db, org)
    fake.reply("", call("core_memory_append", label="human", content="Likes: tea"))
    engine = engine_for(db, fake)
    run, command, *_ = start_run(engine, org.id, agent.id, [user(agent, "I like tea")])

    def cancel_and_delete() -> None:
        engine.fail_run(org.id, run.id, "cancelled", "")
        with db.transaction() as conn:
            assert runs.delete_ended(conn, org.id, run.id)

    with faults.run_at("before_commit", cancel_and_delete):
        outcomes = drive(engine, command)
    assert outcomes[-1].status == "already_done"
    with db.connection() as conn:
        for table in ("steps", "outbox"):
            left = conn.execute(f"SELECT count(*) AS n FROM {table} WHERE run_id = %s", (run.id,))
            assert left.fetchone()["n"] == 0, table
        said = conn.execute("SELECT role FROM messages WHERE run_id = %s", (run.id,)).fetchall()
        assert [m["role"] for m in said] == ["user"]  # the input stays in history; no reply
    assert state_of(db, agent)[1]["human"] == "Name: Ada"  # nothing of the step was kept


def test_steps_record_model_usage_and_timings(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    script(fake)
    turn = send(engine_for(db, fake), agent, "I like tea")
    with db.connection() as conn:
        steps = step_rows.list_steps(conn, org.id, turn.run.id)
    assert [(s.step_index, s.kind, s.status) for s in steps] == [
        (0, "llm", "success"),
        (1, "llm", "success"),
    ]
    assert [s.total_tokens for s in steps] == [420, 484] and steps[1].stop_reason == "end_turn"
    assert all(s.model == "gpt-test" and s.started_at <= s.completed_at for s in steps)  # type: ignore[operator]
    assert turn.run.usage.total_tokens == 904 and turn.run.usage.step_count == 2
    assert turn.run.completed_at is not None and (turn.run.total_duration_ns or 0) > 0


RECORDER = '''
def record(path: str, line: str) -> str:
    """Append a line to a file: an effect outside Cairn.

    Args:
        path: The file.
        line: The text.
    """
    with open(path, "a") as f:
        f.write(line + "\\n")
    return "recorded"
'''


def test_a_custom_tool_with_outside_effects_runs_once_across_a_retry(
    db: Database, org: Organization, fake: FakeLLM, tmp_path: Any
) -> None:
    from cairn.domain import Tool
    from cairn.store import tools
    from cairn.tools.source import derive_schema

    with db.connection() as conn:
        tool = tools.upsert(
            conn,
            Tool(
                organization_id=org.id,
                name="record",
                tool_type="custom",
                source_code=RECORDER,
                json_schema=derive_schema(RECORDER),
            ),
        )
    agent = make_agent(db, org, tool_names=["record"])
    target = tmp_path / "effects.txt"
    fake.reply(
        "",
        call("record", path=str(target), line="once"),
        call("core_memory_append", label="human", content="Likes: tea"),
    )
    fake.reply("done")
    # The effect is a file of the host's, which only a trusted (process) sandbox can write:
    # this is about the step running the tool once, not about isolation.
    engine = engine_for(db, fake, sandbox=SubprocessSandbox(isolation="process"))
    run, command, *_ = start_run(engine, org.id, agent.id, [user(agent, "go")])
    with faults.crash_at("between_tools"), pytest.raises(SimulatedCrash):
        engine.step(org.id, run.id, 0)
    drive(engine, command)
    assert target.read_text() == "once\n"  # the journaled return was reused, not re-run
    assert state_of(db, agent)[1]["human"] == "Name: Ada\nLikes: tea"
    assert tool.id


def test_a_step_deferred_while_the_freeing_checkpoint_commits_still_goes(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    """The checkpoint that frees an agent reads what waits for it before its COMMIT; a step
    deferred after that read must see the release and wake itself, not wait for the sweeper."""
    agent = make_agent(db, org)
    engine = engine_for(db, fake)
    published: list[str] = []

    class Recording:
        def publish(self, command: OutboxCommand) -> None:
            published.append(command.dedup_key)

    queue = Recording()
    fake.reply("first").reply("second")
    a, _, *_ = start_run(engine, org.id, agent.id, [user(agent, "one")])
    b, b_first, *_ = start_run(engine, org.id, agent.id, [user(agent, "two")])
    assert dispatch.publish_and_mark(db, queue, b_first)  # b's step is on its way...
    busy: list[StepOutcome] = []

    def b_arrives() -> None:  # ...and arrives while a holds the agent
        busy.append(engine.step(org.id, b.id, 0))

    deferring = threading.Thread(target=lambda: dispatch.after_step(db, queue, b_first, busy[0]))

    def b_defers() -> None:  # after a's checkpoint read the outbox, before it commits
        deferring.start()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not someone_waits_for_a_lock(db):
            time.sleep(0.01)

    with faults.run_at("before_commit", b_arrives), faults.run_at("inside_commit", b_defers):
        freed = engine.step(org.id, a.id, 0)
    deferring.join(timeout=10)
    assert busy[0].status == "busy"
    assert freed.freed_agent and freed.waiting == ()  # b's step looked sent to a's checkpoint
    assert published.count(b_first.dedup_key) == 2  # so b's deferral woke it
    assert engine.step(org.id, b.id, 0).status == "committed"


def _searchable(db: Database, agent: Agent) -> list[str]:
    with db.connection() as conn:
        found = messages.to_embed(conn, agent.organization_id, agent.id, 1000)
    assert found is not None
    return [message_id for message_id, _ in found.texts]


def test_an_mcp_tool_is_called_once_across_a_retry(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    """A real MCP server (the `mcp` SDK's): the step crashes after the call and before its
    checkpoint; the retry reads the journaled answer instead of calling the server again."""
    from cairn.mcp_servers import store as mcp_servers
    from cairn.mcp_servers.client import McpTool
    from cairn.mcp_servers.models import McpServer
    from cairn.mcp_servers.service import _keep_tools
    from tests.fakes.mcp_server import mcp_server

    base = engine_for(db, fake)
    opened = base.settings.model_copy(update={"outbound_networks": "127.0.0.0/8"})
    engine = Engine(
        db, opened, sandbox=base.sandbox, **engine_ports(opened), external_tools=base.external_tools
    )
    with mcp_server() as server:
        with db.transaction() as conn:
            kept = mcp_servers.put(
                conn,
                engine.sealer,
                McpServer(
                    organization_id=org.id,
                    server_name="calc",
                    server_type="streamable_http",
                    server_url=server.url,
                ),
            )
            schema = {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            }
            _keep_tools(conn, kept, [McpTool("add", "Add two numbers.", schema)])
        agent = make_agent(db, org, tool_names=["add"])
        fake.reply(
            "",
            call("add", a=20, b=22),
            call("core_memory_append", label="human", content="Likes: tea"),
        )
        fake.reply("done")
        run, command, *_ = start_run(engine, org.id, agent.id, [user(agent, "go")])
        with faults.crash_at("between_tools"), pytest.raises(SimulatedCrash):
            engine.step(org.id, run.id, 0)
        drive(engine, command)
    assert server.calls == [("add", {"a": 20, "b": 22})]  # once, not again on the retry
    assert state_of(db, agent)[1]["human"] == "Name: Ada\nLikes: tea"
    with db.connection() as conn:
        history = messages.list_for_agent(conn, org.id, agent.id, limit=50, order="asc")
    assert "42" in " ".join(str(m.content) for m in history if m.role == "tool")
