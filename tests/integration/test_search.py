"""Archival and recall search on real Postgres + pgvector, with the deterministic embedder."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cairn.domain import Organization
from cairn.domain.passages import Archive, Passage
from cairn.embeddings.base import HashEmbedder
from cairn.jobs.embedding_jobs import backfill, embed_agent
from cairn.run.backends.search import archival, recall
from cairn.store import archives, messages
from cairn.store import search as sql_search
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM, call
from tests.integration.engine_harness import engine_for, make_agent, send
from tests.waiting import eventually

EMBED = HashEmbedder(384)
NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def archive_with(
    db: Database, org: Organization, texts: list[tuple[str, list[str]]], start: datetime = NOW
):  # type: ignore[no-untyped-def]
    agent = make_agent(db, org)
    with db.transaction() as conn:
        archive = archives.create_archive(conn, Archive(organization_id=org.id, name="a"))
        archives.attach_archive(conn, org.id, archive.id, agent.id)
        for n, (text, tags) in enumerate(texts):
            archives.insert_passage(
                conn,
                Passage(
                    organization_id=org.id,
                    archive_id=archive.id,
                    text=text,
                    tags=tags,
                    embedding=EMBED.embed([text])[0],
                    created_at=start + timedelta(minutes=n),
                ),
            )
    return agent, archive


def test_archival_search_ranks_by_meaning_and_filters_by_tags_and_dates(
    db: Database, org: Organization
) -> None:
    agent, archive = archive_with(
        db,
        org,
        [
            ("Ada drinks green tea every morning", ["habits", "drinks"]),
            ("The train to Paris leaves at nine", ["travel"]),
            ("Ada prefers tea over coffee", ["drinks"]),
            ("Quarterly report is due Friday", ["work"]),
        ],
    )

    def find(query: str, **kw: object) -> list[str]:
        opts = {"tags": None, "match_all": False, "start": None, "end": None, "limit": 2}
        found = archival(db, agent, archive, query, EMBED, **{**opts, **kw})  # type: ignore[arg-type]
        return [r["content"] for r in found]

    assert set(find("does Ada like tea")) == {
        "Ada drinks green tea every morning",
        "Ada prefers tea over coffee",
    }
    assert find("tea", tags=["travel"]) == ["The train to Paris leaves at nine"]
    assert find("tea", tags=["habits", "drinks"], match_all=True) == [
        "Ada drinks green tea every morning"
    ]
    recent = find("tea", start=NOW + timedelta(minutes=2), limit=5)
    assert set(recent) == {"Ada prefers tea over coffee", "Quarterly report is due Friday"}
    late = find("anything", start=NOW + timedelta(minutes=3), limit=5)
    assert late == ["Quarterly report is due Friday"]


def test_a_selective_filter_still_fills_top_k(db: Database, org: Organization) -> None:
    """1% of rows match the tag: HNSW alone would keep its first candidates and lose most."""
    rows = [
        (f"note {n} about the weather in town {n % 37}", ["rare"] if n % 100 == 7 else [])
        for n in range(1000)
    ]
    agent, archive = archive_with(db, org, rows)
    found = archival(
        db,
        agent,
        archive,
        "weather in town 3",
        EMBED,
        tags=["rare"],
        match_all=False,
        start=None,
        end=None,
        limit=8,
    )
    with db.connection() as conn:
        plan = conn.execute(
            "EXPLAIN SELECT id FROM passages WHERE vector_dims(embedding) = 384 "
            "ORDER BY embedding::vector(384) <=> %s::vector(384) LIMIT 5",
            ("[" + ",".join(["0.05"] * 384) + "]",),
        ).fetchall()
    assert len(found) == 8 and all(r["tags"] == ["rare"] for r in found)
    assert "passages_embedding_384" in " ".join(str(r) for r in plan)  # the HNSW index serves it


def test_recall_is_hybrid_and_leaves_out_the_plumbing(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org, "memgpt_v2_agent")
    engine = engine_for(db, fake)
    fake.reply("", call("send_message", message="Green tea it is, noted!"))
    send(engine, agent, "I really love green tea in the morning")
    fake.reply("", call("conversation_search", query="tea", request_heartbeat=True))
    fake.reply("", call("send_message", message="Trains leave at nine."))
    send(engine, agent, "When do trains to Paris leave?")
    before = recall(
        db, agent, "green tea", EMBED, roles=None, start=None, end=None, limit=5, now=NOW
    )
    assert {r["relevance"]["search_mode"] for r in before["results"]} == {"fts"}  # no vectors yet
    assert embed_agent(engine, org.id, agent.id) > 0
    assert embed_agent(engine, org.id, agent.id) == 0  # idempotent
    found = recall(
        db, agent, "green tea", EMBED, roles=None, start=None, end=None, limit=10, now=NOW
    )
    contents = [r["content"] for r in found["results"]]
    assert contents[0] in ("I really love green tea in the morning", "Green tea it is, noted!")
    top = found["results"][0]["relevance"]
    assert top["search_mode"] == "hybrid" and top["vector_rank"] and top["fts_rank"]
    assert found["message"] == f"Showing {len(contents)} results:"
    assert not any(c.startswith("{") for c in contents)  # heartbeats, logins, tool returns
    users = recall(db, agent, "tea", EMBED, roles=["user"], start=None, end=None, limit=10, now=NOW)
    future = recall(
        db,
        agent,
        "tea",
        EMBED,
        roles=None,
        start=NOW + timedelta(days=999),
        end=None,
        limit=10,
        now=NOW,
    )
    assert {r["role"] for r in users["results"]} == {"user"}
    assert future["results"] == []


def test_step_archival_insert_skips_an_identical_text_and_says_so(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org, tool_names=["archival_memory_insert"])
    engine = engine_for(db, fake)
    fake.reply("", call("archival_memory_insert", content="Ada takes tea at five"))
    fake.reply("", call("archival_memory_insert", content="Ada takes tea at five"))
    fake.reply("done")
    turn = send(engine, agent, "remember twice")
    first, second = (
        json.loads(m.tool_returns[0].func_response)["message"]  # type: ignore[index]
        for m in turn.new
        if m.role == "tool"
    )
    assert first == "Stored in archival memory."
    assert second.startswith("Not stored again: archival memory already holds this exact text")
    with db.connection() as conn:
        archive = archives.archive_for_agent(conn, org.id, agent.id)
        assert archive is not None
        stored = archives.list_passages(conn, org.id, archive.id)
    assert len(stored) == 1 and stored[0].embedding is not None
    assert len(stored[0].embedding) == 384


def test_the_sweeper_backfills_messages_left_without_embeddings(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    engine = engine_for(db, fake)
    fake.reply("hello there")
    send(engine, agent, "hi, I am Ada")
    with db.connection() as conn:
        before = messages.to_embed(conn, org.id, agent.id, 10)
        assert before is not None and len(before.texts) >= 2
        assert (
            messages.to_embed(conn, org.id, "agent-00000000-0000-4000-8000-000000000000", 10)
            is None
        )
    assert backfill(engine)[0] >= 2
    with db.connection() as conn:
        after = messages.to_embed(conn, org.id, agent.id, 10)
        assert after is not None and after.texts == []


def test_an_archival_insert_refreshes_the_memory_metadata(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org, tool_names=["archival_memory_insert"])
    engine = engine_for(db, fake)
    fake.reply("", call("archival_memory_insert", content="Ada takes tea at five", tags=["habits"]))
    fake.reply("done")
    send(engine, agent, "remember")
    with db.connection() as conn:
        from cairn.store import agents

        fresh = agents.get(conn, org.id, agent.id)
        assert fresh is not None
        system = messages.get(conn, org.id, fresh.message_ids[0])
    assert system is not None
    assert "- 1 total memories you created are stored in archival memory" in system.text
    assert "- Available archival memory tags: habits" in system.text
    # and the next request already showed it to the model
    assert (
        "Available archival memory tags: habits" in fake.requests[1].body["messages"][0]["content"]
    )


def test_embeddings_of_different_sizes_coexist(db: Database, org: Organization) -> None:
    small, large = HashEmbedder(384), HashEmbedder(1536)
    agent = make_agent(db, org)
    with db.transaction() as conn:
        archive = archives.create_archive(conn, Archive(organization_id=org.id, name="mixed"))
        archives.attach_archive(conn, org.id, archive.id, agent.id)
        for text, model in (("tea at five", small), ("tea at six", large)):
            archives.insert_passage(
                conn,
                Passage(
                    organization_id=org.id,
                    archive_id=archive.id,
                    text=text,
                    embedding=model.embed([text])[0],
                ),
            )
    by_small = archival(
        db,
        agent,
        archive,
        "tea",
        small,
        tags=None,
        match_all=False,
        start=None,
        end=None,
        limit=5,
    )
    by_large = archival(
        db,
        agent,
        archive,
        "tea",
        large,
        tags=None,
        match_all=False,
        start=None,
        end=None,
        limit=5,
    )

    # each query vector meets only the passages of its own size; the other passage is
    # still found, by its words alone
    def vector_ranks(results: list[dict[str, Any]]) -> dict[str, int | None]:
        return {r["content"]: r["relevance"]["vector_rank"] for r in results}

    assert vector_ranks(by_small) == {"tea at five": 1, "tea at six": None}
    assert vector_ranks(by_large) == {"tea at six": 1, "tea at five": None}


def test_the_words_half_runs_while_the_query_is_embedded(
    db: Database, org: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query's embedding (CPU in this process) and the words' statement (in Postgres)
    overlap, and no connection is held while the model runs: an embedder that waits for the
    words' statement to end would wait forever if they ran one after the other."""
    agent, archive = archive_with(
        db, org, [("Ada drinks green tea every morning", []), ("The train leaves at nine", [])]
    )
    words_done = threading.Event()
    real_words = sql_search.words
    words_thread: list[str] = []

    def words(*args: Any, **kwargs: Any) -> sql_search.Words:
        found = real_words(*args, **kwargs)
        words_thread.append(threading.current_thread().name)
        words_done.set()
        return found

    monkeypatch.setattr(sql_search, "words", words)
    seen: list[tuple[str, int]] = []

    class Overlapping:
        model, dim = EMBED.model, EMBED.dim

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            assert words_done.wait(10), "the words' statement waited for the embedding"
            # the words' connection goes back to the pool; the caller holds none meanwhile
            seen.append((threading.current_thread().name, eventually(lambda: db.in_use() == 0)))
            return EMBED.embed(texts)

    opts: dict[str, Any] = {"tags": None, "match_all": False, "start": None, "end": None}
    found = archival(db, agent, archive, "green tea", Overlapping(), limit=1, **opts)
    assert [r["content"] for r in found] == ["Ada drinks green tea every morning"]
    assert found[0]["relevance"]["vector_rank"] == 1  # the vector came in time for the fusion
    ((thread, none_held),) = seen
    # the embedding, the longer half, on the caller's thread; the words' statement beside it
    assert thread == threading.current_thread().name and none_held
    assert words_thread[0].startswith("search-words")
