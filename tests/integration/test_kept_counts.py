"""The sizes a step shows (messages, passages, tags) are kept by the writes, exact under
concurrency, and a step's claim reads them without touching the history or the archive."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from cairn.domain import Archive, Organization, Passage
from cairn.store import archives, claim, messages
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM, call
from tests.integration.engine_harness import engine_for, make_agent, send, user


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def real_sizes(db: Database, agent_id: str, archive_id: str) -> tuple[int, int, list[str]]:
    with db.connection() as conn:
        row = conn.execute(
            """SELECT (SELECT count(*) FROM messages WHERE agent_id = %(a)s) AS m,
                      (SELECT count(*) FROM passages WHERE archive_id = %(r)s) AS p,
                      (SELECT coalesce(array_agg(DISTINCT t ORDER BY t), '{}')
                       FROM passages, unnest(tags) t WHERE archive_id = %(r)s) AS tags""",
            {"a": agent_id, "r": archive_id},
        ).fetchone()
    assert row is not None
    return row["m"], row["p"], list(row["tags"])


def kept_sizes(
    db: Database, org: str, agent_id: str, archive_id: str
) -> tuple[int, int, list[str]]:
    with db.connection() as conn:
        return (
            messages.count_for_agent(conn, org, agent_id),
            archives.count_passages(conn, org, archive_id),
            archives.archive_tags(conn, org, archive_id),
        )


def archive_of(db: Database, org: Organization, agent_id: str) -> Archive:
    with db.transaction() as conn:
        made = archives.create_archive(conn, Archive(organization_id=org.id, name="memories"))
        archives.attach_archive(conn, org.id, made.id, agent_id)
    return made


def bulk_load(db: Database, org: Organization, agent_id: str, archive_id: str) -> None:
    """3,000 passages (50 tags) and a history of 20,000 messages: large enough that the
    planner would not scan them just because the tables are small."""
    with db.connection() as conn:
        conn.execute(
            """INSERT INTO passages (id, organization_id, archive_id, text, content_hash, tags)
               SELECT %(archive)s || '-' || i, %(org)s, %(archive)s, 'fact ' || i, md5(i::text),
                      ARRAY['tag' || (i %% 50)] FROM generate_series(1, 3000) i""",
            {"org": org.id, "archive": archive_id},
        )
        conn.execute(
            """INSERT INTO messages (id, organization_id, agent_id, role, content)
               SELECT %(agent)s || '-old-' || i, %(org)s, %(agent)s, 'user',
                      jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'old ' || i))
               FROM generate_series(1, 20000) i""",
            {"org": org.id, "agent": agent_id},
        )
        conn.execute("ANALYZE passages")
        conn.execute("ANALYZE messages")


def passage(org: Organization, archive_id: str, text: str, *tags: str) -> Passage:
    return Passage(organization_id=org.id, archive_id=archive_id, text=text, tags=list(tags))


def test_kept_sizes_follow_every_kind_of_write(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    archive = archive_of(db, org, agent.id)
    # A turn that inserts passages with tags, through the step's own checkpoint.
    fake.reply("", call("archival_memory_insert", content="tea at four", tags=["habits", "tea"]))
    fake.reply("", call("archival_memory_insert", content="likes green", tags=["tea"]))
    fake.reply("Noted.")
    send(engine_for(db, fake), agent, "remember my tea")
    assert kept_sizes(db, org.id, agent.id, archive.id) == real_sizes(db, agent.id, archive.id)
    assert kept_sizes(db, org.id, agent.id, archive.id)[2] == ["habits", "tea"]
    with db.transaction() as conn:  # a bulk statement, a capture, a delete of the last "habits"
        for i in range(50):
            archives.insert_passage(conn, passage(org, archive.id, f"fact {i}", f"t{i % 3}"))
        messages.insert(conn, [user(agent, f"captured {i}") for i in range(20)])
        habits = [
            p
            for p in archives.list_passages(conn, org.id, archive.id, limit=100)
            if "habits" in p.tags
        ]
        archives.delete_passage(conn, org.id, habits[0].id)
    kept = kept_sizes(db, org.id, agent.id, archive.id)
    assert kept == real_sizes(db, agent.id, archive.id)
    assert kept[2] == ["t0", "t1", "t2", "tea"]  # "habits" went with its last passage
    with pytest.raises(ZeroDivisionError), db.transaction() as conn:  # rolled back: no trace
        archives.insert_passage(conn, passage(org, archive.id, "rolled back", "ghost"))
        raise ZeroDivisionError
    assert kept_sizes(db, org.id, agent.id, archive.id) == kept


def test_concurrent_writers_of_one_archive_lose_no_tag(db: Database, org: Organization) -> None:
    agent = make_agent(db, org)
    archive = archive_of(db, org, agent.id)
    start = threading.Barrier(4)

    def writer(n: int) -> None:
        start.wait()
        for i in range(10):
            with db.transaction() as conn:
                archives.insert_passage(conn, passage(org, archive.id, f"w{n}-{i}", f"w{n}-{i}"))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    kept = kept_sizes(db, org.id, agent.id, archive.id)
    assert kept == real_sizes(db, agent.id, archive.id) and kept[1] == 40 and len(kept[2]) == 40


# The only ways a step may reach messages and passages: one row by its key (the context
# window's ids; an archival insert's duplicate check).
POINT_INDEXES = {"messages_pkey", "passages_pkey", "passages_unique_text"}


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _claim_params(org_id: str) -> dict[str, object]:
    """The claim's parameters for a run that is not there: enough to plan it."""
    return {
        "org": org_id,
        "run": "run-none",
        "idx": 0,
        "ttl": 60,
        "next_key": "x",
        "key": "y",
        "cap": 3,
        "lock_held": False,
        "reserve_at": 10,
        "held": "",
        "held_agent": None,
        "held_stamp": -1,
        "held_upto": -1,
        "held_tools": None,
    }


def test_a_steps_claim_reads_neither_the_history_nor_the_archive(
    db: Database, org: Organization
) -> None:
    """However large the archive and history, the claim touches messages only by primary
    key (the context window's ids) and passages not at all."""
    agent = make_agent(db, org)
    archive = archive_of(db, org, agent.id)
    bulk_load(db, org, agent.id, archive.id)
    with db.connection() as conn:
        statement = claim.CLAIM
        params = _claim_params(org.id)
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + statement, params).fetchone()
    assert plan is not None
    nodes = list(_nodes(next(iter(plan.values()))[0]["Plan"]))
    touched = {(n.get("Relation Name"), n["Node Type"]) for n in nodes if n.get("Relation Name")}
    assert not any(name == "passages" for name, _ in touched), touched
    on_messages = {kind for name, kind in touched if name == "messages"}
    assert on_messages <= {"Index Scan", "Index Only Scan"}, touched  # by id, never a scan
    assert json.dumps(plan).count("archive_stats") >= 1


def test_a_misjudged_window_never_makes_the_claim_scan_the_history(
    db: Database, org: Organization
) -> None:
    """Statistics that say the agent's window is 20,000 entries (left by entries since
    deleted, as an earlier test left them once in CI): the claim still reads each entry's
    message by its key. A lateral join there was flattened into a join, and the planner
    then scanned all 20,000 messages (migration 0052)."""
    agent = make_agent(db, org)
    archive = archive_of(db, org, agent.id)
    bulk_load(db, org, agent.id, archive.id)
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO context_entries (agent_id, position, message_id, organization_id)"
            " SELECT %(agent)s, 1000 + i, %(agent)s || '-old-' || i, %(org)s"
            " FROM generate_series(1, 20000) i",
            {"agent": agent.id, "org": org.id},
        )
        conn.execute("ANALYZE context_entries")
        conn.execute("DELETE FROM context_entries WHERE agent_id = %s", (agent.id,))
        params = _claim_params(org.id)
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + claim.CLAIM, params).fetchone()
    assert plan is not None
    nodes = list(_nodes(next(iter(plan.values()))[0]["Plan"]))
    on_messages = {n["Node Type"] for n in nodes if n.get("Relation Name") == "messages"}
    assert on_messages == {"Index Scan"}, on_messages


def test_the_claim_reads_each_window_entrys_message_at_most_twice(
    db: Database, org: Organization
) -> None:
    """Two reads of `messages` in the claim's plan: each entry's version, and the body of
    one not held parsed. The version's subquery, pulled up into the query reading it, was
    copied into each of its three uses: three reads an entry (migration 0053)."""
    params = _claim_params(org.id)
    with db.connection() as conn:
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + claim.CLAIM, params).fetchone()
    assert plan is not None
    nodes = list(_nodes(next(iter(plan.values()))[0]["Plan"]))
    on_messages = [n["Index Name"] for n in nodes if n.get("Relation Name") == "messages"]
    assert on_messages == ["messages_pkey", "messages_pkey"], on_messages


def test_the_messages_to_embed_are_found_by_their_own_index(
    db: Database, org: Organization
) -> None:
    """An embedding job's read and the backfill's probe of each agent go through
    messages_to_embed, never the history: 20,000 messages without a vector and without
    words to embed are passed over (migration 0047 dropped the index of every message
    without a vector)."""
    agent = make_agent(db, org)
    archive = archive_of(db, org, agent.id)
    bulk_load(db, org, agent.id, archive.id)
    reads = [
        (messages.TO_EMBED, {"org": org.id, "agent": agent.id, "limit": 128}),
        (messages.AGENTS_TO_EMBED, {"limit": 20}),
    ]
    with db.connection() as conn:
        for query, params in reads:
            row = conn.execute("EXPLAIN (FORMAT JSON) " + query, params).fetchone()
            assert row is not None
            used = {
                (node["Node Type"], node.get("Index Name"))
                for node in _nodes(next(iter(row.values()))[0]["Plan"])
                if node.get("Relation Name") == "messages"
            }
            assert used and all(name == "messages_to_embed" for _, name in used), used


def test_no_statement_of_a_turn_scans_the_history_or_the_archive(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    """Every statement a turn sends (the run, its claims, the journal, the checkpoints with
    an archival insert), explained at 3,000 passages and 20,000 messages: messages and
    passages are reached only through an index condition, never scanned whole."""
    import psycopg

    agent = make_agent(db, org)
    archive = archive_of(db, org, agent.id)
    bulk_load(db, org, agent.id, archive.id)
    sent: list[tuple[str, Any]] = []
    original = psycopg.Connection.execute

    def recording(conn: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if isinstance(query, str):
            sent.append((query, params))
        return original(conn, query, params, **kwargs)

    fake.reply("", call("archival_memory_insert", content="tea at four", tags=["tea"]))
    fake.reply("Noted.")
    psycopg.Connection.execute = recording  # type: ignore[method-assign]
    try:
        turn = send(engine_for(db, fake), agent, "remember my tea")
    finally:
        psycopg.Connection.execute = original  # type: ignore[method-assign]
    assert turn.run.status == "completed" and len(turn.outcomes) == 2
    explained, seen = 0, set()
    with db.connection() as conn:
        for query, params in sent:
            verb = query.lstrip().split(None, 1)[0].upper()
            if verb not in ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE"):
                continue
            with conn.transaction(force_rollback=True):
                row = conn.execute("EXPLAIN (FORMAT JSON) " + query, params).fetchone()
            assert row is not None
            explained += 1
            for node in _nodes(next(iter(row.values()))[0]["Plan"]):
                relation, kind = node.get("Relation Name"), node["Node Type"]
                if relation in ("messages", "passages") and "Scan" in kind:
                    seen.add((relation, kind, node.get("Index Name")))
                    # One row by its key, nothing wider.
                    assert node.get("Index Name") in POINT_INDEXES, (query[:200], node)
    assert explained >= 8 and ("messages", "Index Scan", "messages_pkey") in seen
