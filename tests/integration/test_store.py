"""Repository behaviour on real PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest
from pydantic import ValidationError

from cairn.domain import (
    Block,
    Message,
    Organization,
    OutboxCommand,
    Passage,
    TextContent,
    Tool,
    ToolCall,
)
from cairn.domain.agents import AgentFilter
from cairn.domain.messages import FunctionCall
from cairn.domain.tenancy import hash_api_key
from cairn.errors import VersionConflictError
from cairn.store import Database, agents, archives, blocks, groups, messages, outbox, tenancy, tools
from tests.integration.world import build_world, make_agent


def test_block_value_over_limit_is_rejected_by_the_model(org: Organization) -> None:
    with pytest.raises(ValidationError, match=r"Value length \(6 characters\) exceeds block limit"):
        Block(organization_id=org.id, label="human", value="abcdef", limit=5)


def test_block_value_over_limit_is_rejected_by_the_database(
    db: Database, org: Organization
) -> None:
    with db.transaction() as conn:
        block = blocks.create(
            conn, Block(organization_id=org.id, label="human", value="ab", limit=5)
        )
    with (
        pytest.raises(psycopg.errors.CheckViolation, match="blocks_value_within_limit"),
        db.transaction() as conn,
    ):
        conn.execute("UPDATE blocks SET value = 'abcdef' WHERE id = %s", (block.id,))
    with db.connection() as conn:
        stored = blocks.get(conn, org.id, block.id)
    assert stored is not None and stored.value == "ab"


def test_block_limit_counts_characters_not_bytes(db: Database, org: Organization) -> None:
    with db.transaction() as conn:
        block = blocks.create(
            conn, Block(organization_id=org.id, label="human", value="ééééé", limit=5)
        )
    assert block.value == "ééééé"


@pytest.mark.parametrize("label", ["", "has space", "<x>", "a" * 101])
def test_bad_block_labels_are_rejected_by_model_and_database(
    db: Database, org: Organization, label: str
) -> None:
    with pytest.raises(ValidationError):
        Block(organization_id=org.id, label=label)
    with pytest.raises(psycopg.errors.CheckViolation), db.transaction() as conn:
        conn.execute(
            "INSERT INTO blocks (id, organization_id, label) VALUES (%s, %s, %s)",
            (Block(organization_id=org.id, label="ok").id, org.id, label),
        )


def test_block_update_bumps_version_and_keeps_history(db: Database, org: Organization) -> None:
    with db.transaction() as conn:
        block = blocks.create(conn, Block(organization_id=org.id, label="human", value="v1"))
        edited = blocks.update(
            conn,
            block.model_copy(update={"value": "v2"}),
            expected_version=1,
            actor_type="agent",
            actor_id="agent-x",
        )
        history = blocks.history(conn, org.id, block.id)

    assert edited.version == 2 and edited.value == "v2"
    assert [(h.version, h.value, h.actor_type) for h in history] == [
        (1, "v1", "user"),
        (2, "v2", "agent"),
    ]


def test_stale_block_write_loses_and_changes_nothing(db: Database, org: Organization) -> None:
    with db.transaction() as conn:
        block = blocks.create(conn, Block(organization_id=org.id, label="human", value="v1"))
        blocks.update(conn, block.model_copy(update={"value": "first"}), expected_version=1)
    with pytest.raises(VersionConflictError), db.transaction() as conn:
        blocks.update(conn, block.model_copy(update={"value": "second"}), expected_version=1)
    with db.connection() as conn:
        stored = blocks.get(conn, org.id, block.id)
        assert stored is not None and (stored.value, stored.version) == ("first", 2)
        assert len(blocks.history(conn, org.id, block.id)) == 2


def test_one_block_per_label_per_agent_and_shared_blocks(db: Database, org: Organization) -> None:
    with db.transaction() as conn:
        a1 = agents.create(conn, make_agent(org.id, "one"))
        a2 = agents.create(conn, make_agent(org.id, "two"))
        shared = blocks.create(conn, Block(organization_id=org.id, label="human", value="shared"))
        other = blocks.create(conn, Block(organization_id=org.id, label="human", value="other"))
        assert blocks.attach(conn, org.id, a1.id, shared.id)
        assert blocks.attach(conn, org.id, a2.id, shared.id)
        assert blocks.attach(conn, org.id, a1.id, shared.id)  # again: still attached, no error
    with pytest.raises(psycopg.errors.UniqueViolation), db.transaction() as conn:
        blocks.attach(conn, org.id, a1.id, other.id)
    with db.connection() as conn:
        assert set(blocks.agent_ids(conn, org.id, shared.id)) == {a1.id, a2.id}


def test_renaming_a_block_follows_into_its_attachments(db: Database, org: Organization) -> None:
    with db.transaction() as conn:
        agent = agents.create(conn, make_agent(org.id))
        block = blocks.create(conn, Block(organization_id=org.id, label="human", value="x"))
        blocks.attach(conn, org.id, agent.id, block.id)
        blocks.update(conn, block.model_copy(update={"label": "user_profile"}), expected_version=1)
        found = blocks.for_agent_by_label(conn, org.id, agent.id, "user_profile")
    assert found is not None and found.id == block.id


def test_agent_update_is_version_checked(db: Database, org: Organization) -> None:
    with db.transaction() as conn:
        agent = agents.create(conn, make_agent(org.id))
        moved = agents.update(
            conn, agent.model_copy(update={"description": "moved"}), expected_version=1
        )
    assert moved.version == 2 and moved.description == "moved"
    with pytest.raises(VersionConflictError), db.transaction() as conn:
        agents.update(conn, agent.model_copy(update={"description": "lost"}), expected_version=1)


def test_agent_round_trips_every_config_document(db: Database, org: Organization) -> None:
    agent = make_agent(
        org.id,
        embedding_config={"embedding_model": "text-embedding-3-small", "embedding_dim": 1536},
        compaction_settings={"mode": "all"},
        tool_rules=[
            {"type": "run_first", "tool_name": "x", "args": {"a": 1}},
            {"type": "max_count_per_step", "tool_name": "y", "max_count_limit": 2},
        ],
        tags=["a", "b"],
        metadata={"k": [1, 2]},
        timezone="Europe/Paris",
    )
    with db.transaction() as conn:
        agents.create(conn, agent)
        stored = agents.get(conn, org.id, agent.id)
    assert stored is not None
    assert stored.model_dump(exclude={"created_at", "updated_at"}) == agent.model_dump(
        exclude={"created_at", "updated_at"}
    )


def test_list_agents_filters_and_pages(db: Database, org: Organization) -> None:
    with db.transaction() as conn:
        made = [
            agents.create(conn, make_agent(org.id, f"bot-{i}", tags=[f"t{i % 2}", "all"]))
            for i in range(5)
        ]
        newest_first = agents.list_agents(conn, org.id)
        page2 = agents.list_agents(conn, org.id, after=newest_first[1].id, limit=2)
        oldest_first = agents.list_agents(conn, org.id, order="asc", limit=2)
        tagged = agents.list_agents(
            conn, org.id, AgentFilter(tags=["t0", "all"], match_all_tags=True)
        )
        searched = agents.list_agents(conn, org.id, AgentFilter(query_text="ot-3"))
    assert [a.id for a in newest_first] == [a.id for a in reversed(made)]
    assert [a.id for a in page2] == [made[2].id, made[1].id]
    assert [a.id for a in oldest_first] == [made[0].id, made[1].id]
    assert sorted(a.name for a in tagged) == ["bot-0", "bot-2", "bot-4"]
    assert [a.name for a in searched] == ["bot-3"]


def test_messages_get_increasing_sequence_ids_and_retry_is_harmless(
    db: Database, org: Organization
) -> None:
    with db.transaction() as conn:
        agent = agents.create(conn, make_agent(org.id))
        batch = [
            Message(
                organization_id=org.id,
                agent_id=agent.id,
                role="user",
                content=[TextContent(text=f"m{i}")],
            )
            for i in range(3)
        ]
        first = messages.insert(conn, batch)
        again = messages.insert(conn, batch)
        assert messages.count_for_agent(conn, org.id, agent.id) == 3
        later = messages.insert(
            conn, [Message(organization_id=org.id, agent_id=agent.id, role="assistant")]
        )
    seqs = [m.sequence_id for m in first]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3
    assert [m.sequence_id for m in again] == seqs
    assert later[0].sequence_id is not None and later[0].sequence_id > seqs[-1]


def test_messages_round_trip_and_load_in_context_order(db: Database, org: Organization) -> None:
    call = ToolCall(
        id="call_1",
        function=FunctionCall(name="send_message", arguments='{"message": "hello there, friend"}'),
    )
    with db.transaction() as conn:
        agent = agents.create(conn, make_agent(org.id))
        stored = messages.insert(
            conn,
            [
                Message(
                    organization_id=org.id,
                    agent_id=agent.id,
                    role="system",
                    content=[TextContent(text="sys")],
                ),
                Message(
                    organization_id=org.id, agent_id=agent.id, role="assistant", tool_calls=[call]
                ),
            ],
        )
        loaded = messages.get_many(conn, org.id, [stored[1].id, stored[0].id])
        fts_hit = conn.execute(
            "SELECT id FROM messages WHERE fts @@ plainto_tsquery('english', 'friends')"
        ).fetchall()
    assert [m.id for m in loaded] == [stored[1].id, stored[0].id]
    assert loaded[0].tool_calls == [call] and loaded[1].text == "sys"
    assert [r["id"] for r in fts_hit] == [stored[1].id]


def test_list_messages_by_cursor(db: Database, org: Organization) -> None:
    with db.transaction() as conn:
        agent = agents.create(conn, make_agent(org.id))
        ms = messages.insert(
            conn,
            [
                Message(
                    organization_id=org.id,
                    agent_id=agent.id,
                    role="user",
                    content=[TextContent(text=str(i))],
                )
                for i in range(5)
            ],
        )
        newest = messages.list_for_agent(conn, org.id, agent.id, limit=2)
        after = messages.list_for_agent(conn, org.id, agent.id, after=ms[1].id, order="asc")
        before = messages.list_for_agent(conn, org.id, agent.id, before=ms[3].id, limit=2)
    assert [m.text for m in newest] == ["4", "3"]
    assert [m.text for m in after] == ["2", "3", "4"]
    assert [m.text for m in before] == ["2", "1"]


def test_identical_passage_text_is_stored_once_per_archive(db: Database, org: Organization) -> None:
    with db.transaction() as conn:
        world = build_world(conn, "other")  # an archive with "the sky is blue" already
        again, created = archives.insert_passage(
            conn,
            Passage(
                organization_id=world.org.id,
                archive_id=world.archive.id,
                text="the sky is blue",
                embedding=[0.1, 0.2, 0.3],
            ),
        )
        new, created_new = archives.insert_passage(
            conn,
            Passage(
                organization_id=world.org.id,
                archive_id=world.archive.id,
                text="grass is green",
                embedding=[0.1, 0.2, 0.3],
            ),
        )
        count = archives.count_passages(conn, world.org.id, world.archive.id)
    assert (created, again.id) == (False, world.passage.id)
    assert created_new and new.embedding == pytest.approx([0.1, 0.2, 0.3])
    assert count == 2


def test_tool_upsert_by_name_keeps_the_id(db: Database, org: Organization) -> None:
    with db.transaction() as conn:
        first = tools.upsert(conn, Tool(organization_id=org.id, name="echo", description="v1"))
        second = tools.upsert(conn, Tool(organization_id=org.id, name="echo", description="v2"))
    assert second.id == first.id and second.description == "v2"


def test_tool_name_limit_enforced_by_model_and_database(db: Database, org: Organization) -> None:
    with pytest.raises(ValidationError):
        Tool(organization_id=org.id, name="x" * 49)
    with pytest.raises(psycopg.errors.CheckViolation), db.transaction() as conn:
        conn.execute(
            "INSERT INTO tools (id, organization_id, name) VALUES ('tool-x', %s, %s)",
            (org.id, "x" * 49),
        )


def test_api_keys_are_stored_hashed_and_authenticate(db: Database, org: Organization, user) -> None:
    with db.transaction() as conn:
        key, plain = tenancy.create_api_key(conn, org.id, user.id)
        stored = conn.execute("SELECT key_hash FROM api_keys WHERE id = %s", (key.id,)).fetchone()
        assert stored == {"key_hash": hash_api_key(plain)}
        assert plain not in str(conn.execute("SELECT * FROM api_keys").fetchall())
        found = tenancy.authenticate(conn, plain)
        assert found is not None and found.organization_id == org.id
        assert tenancy.authenticate(conn, plain + "x") is None
        tenancy.revoke_api_key(conn, org.id, key.id)
        assert tenancy.authenticate(conn, plain) is None


def test_a_waiting_step_freed_by_two_runs_ending_at_once_goes_to_one_of_them(
    db: Database,
) -> None:
    """Two checkpoints of one organization, each ending a run, read the steps their end
    frees: a step waiting for the organization's share goes to the first only (it was
    published by both, and both deliveries called the model)."""
    with db.transaction() as conn:
        world = build_world(conn)
        ended = [agents.create(conn, make_agent(world.org.id, name=f"done-{n}")) for n in (1, 2)]
    free = {"org": world.org.id, "cap": 3}
    with db.connection() as first, db.connection() as second:
        first.execute("BEGIN")
        second.execute("BEGIN")
        try:
            taken = first.execute(
                outbox.WAITING_FOR_RELEASE, {**free, "agent_id": ended[0].id, "run": "run-a"}
            ).fetchall()
            also = second.execute(
                outbox.WAITING_FOR_RELEASE, {**free, "agent_id": ended[1].id, "run": "run-b"}
            ).fetchall()
            assert [r["id"] for r in taken] == [world.outbox_id]
            assert also == []
        finally:
            first.execute("ROLLBACK")
            second.execute("ROLLBACK")
        again = second.execute(
            outbox.WAITING_FOR_RELEASE, {**free, "agent_id": ended[1].id, "run": "run-b"}
        ).fetchall()
        assert [r["id"] for r in again] == [world.outbox_id]  # free once the first let go


def test_outbox_command_written_once_and_sent_once(db: Database) -> None:
    with db.transaction() as conn:
        world = build_world(conn)
        duplicate = outbox.add(
            conn,
            OutboxCommand(
                organization_id=world.org.id,
                agent_id=world.agent.id,
                run_id=world.run.id,
                kind="step",
                dedup_key=f"{world.run.id}:1",
            ),
        )
        assert duplicate is None
        assert [c.id for c in outbox.claim_unsent(conn, older_than_seconds=0)] == [world.outbox_id]
        assert outbox.mark_sent(conn, world.org.id, world.outbox_id)
        assert not outbox.mark_sent(conn, world.org.id, world.outbox_id)
        assert outbox.claim_unsent(conn, older_than_seconds=0) == []


def test_a_step_put_back_before_its_publisher_marks_it_stays_waiting(db: Database) -> None:
    """Publish, a worker takes it at once, finds the agent busy and puts it back; only then
    does the publisher mark it sent. Marked, it would be in neither the queue nor among the
    agent's waiting steps: its run would wait for the watchdog (half an hour by default)."""
    with db.transaction() as conn:
        world = build_world(conn)
        published = outbox.get(conn, world.org.id, world.outbox_id)
        assert published is not None
        outbox.mark_unsent(conn, world.org.id, world.outbox_id)  # the worker, meanwhile
        assert not outbox.mark_sent(conn, world.org.id, world.outbox_id, published.attempts)
        waiting = outbox.unsent_for_agent(conn, world.org.id, world.agent.id)
        assert [c.id for c in waiting] == [world.outbox_id]
        # Published again, as the attempt it now is: marked.
        assert outbox.mark_sent(conn, world.org.id, world.outbox_id, waiting[0].attempts)
        assert outbox.unsent_for_agent(conn, world.org.id, world.agent.id) == []
        assert outbox.mark_all_sent(conn, world.org.id, [(world.outbox_id, 0)]) == 0


def test_pruning_deletes_rows_sent_long_ago_but_the_newest_fan_out(db: Database) -> None:
    with db.transaction() as conn:
        world = build_world(conn)

        def row(kind: str, key: str, sent_days_ago: float | None) -> int:
            command = outbox.add(
                conn,
                OutboxCommand(
                    organization_id=world.org.id,
                    agent_id=world.agent.id,
                    run_id=world.run.id,
                    kind=kind,
                    dedup_key=key,
                ),
            )  # type: ignore[arg-type]
            assert command is not None and command.id is not None
            if sent_days_ago is not None:
                conn.execute(
                    "UPDATE outbox SET sent_at = now() - make_interval(days => %s) WHERE id = %s",
                    (sent_days_ago, command.id),
                )
            return command.id

        old_step = row("step", "old:1", 10)
        recent_step = row("step", "recent:1", 1)
        never_sent = row("step", "stuck:1", None)
        old_fan_out = row("sleeptime", "sleeptime:a", 30)
        newest_fan_out = row("sleeptime", "sleeptime:b", 20)
        assert outbox.prune_sent(conn, older_than_seconds=7 * 86_400) == 2
        left = {r["id"] for r in conn.execute("SELECT id FROM outbox").fetchall()}
        assert old_step not in left and old_fan_out not in left
        assert {recent_step, never_sent, newest_fan_out, world.outbox_id} <= left
        assert outbox.prune_sent(conn, older_than_seconds=7 * 86_400) == 0


def test_deleting_an_agent_removes_its_group_and_rows(db: Database) -> None:
    with db.transaction() as conn:
        world = build_world(conn)
        assert agents.delete(conn, world.org.id, world.agent.id)
        assert groups.get(conn, world.org.id, world.group.id) is None
        assert messages.get(conn, world.org.id, world.message.id) is None
        # Blocks are shared objects: detached, not deleted.
        assert blocks.get(conn, world.org.id, world.block.id) is not None


def test_hot_statements_are_prepared_only_when_asked(pg_dsn: str) -> None:
    query = "SELECT count(*) FROM organizations WHERE name = $1"
    for prepare in (True, False):
        db = Database(pg_dsn, prepare=prepare)
        try:
            with db.connection() as conn:
                for _ in range(3):
                    conn.execute("SELECT count(*) FROM organizations WHERE name = %s", ("x",))
                rows = conn.execute("SELECT statement FROM pg_prepared_statements").fetchall()
            assert (query in [r["statement"] for r in rows]) is prepare
        finally:
            db.close()
