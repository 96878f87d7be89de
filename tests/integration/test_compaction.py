"""Compaction (reference §8) as its own step: summary after the system message, nothing lost."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cairn.domain import Organization
from cairn.domain.configs import CompactionSettings
from cairn.memory.packaging import SUMMARY_PREAMBLE
from cairn.run.steps.compaction import DEFAULT_PROMPT, cut_index
from cairn.store import messages, steps
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM, Recorded, Reply
from tests.integration.engine_harness import engine_for, make_agent, send, state_of

WINDOW = 4096  # the smallest window an agent may have


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        server.when(is_summary_request, Reply(text="Ada likes tea; asked about trains."))
        search = Reply(tool_calls=[("conversation_search", {"query": "x"})])
        server.when(
            lambda r: r.body["messages"][-1]["role"] == "user" and "search" in r.last_text(), search
        )
        server.when(lambda r: True, Reply(text="ok", usage=(0, 0)))
        yield server


def is_summary_request(r: Recorded) -> bool:
    return r.body["messages"][0]["content"] == DEFAULT_PROMPT


def chat(db: Database, org: Organization, fake: FakeLLM, mode: str = "sliding_window"):  # type: ignore[no-untyped-def]
    agent = make_agent(
        db, org, context_window=WINDOW, compaction_settings=CompactionSettings(mode=mode)
    )  # type: ignore[arg-type]
    engine = engine_for(db, fake)
    turns = [send(engine, agent, f"search {n}: " + "words about trains " * 150) for n in range(4)]
    return agent, turns


def test_sliding_window_summarises_the_oldest_half(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent, turns = chat(db, org, fake)
    summaries = [r for r in fake.requests if is_summary_request(r)]
    assert summaries, "the context outgrew its window, so a compaction step ran"
    with db.connection() as conn:
        kinds = [s.kind for t in turns for s in steps.list_steps(conn, org.id, t.run.id)]
    assert "compaction" in kinds
    fresh, _, context = state_of(db, agent)
    alert = json.loads(context[1].text)
    assert alert["type"] == "system_alert" and alert["message"].startswith(SUMMARY_PREAMBLE)
    assert alert["message"].endswith("Ada likes tea; asked about trains.")
    # evicted messages left the context only
    with db.connection() as conn:
        stored = messages.list_for_agent(conn, org.id, agent.id, order="asc", limit=500)
    assert len(stored) > len(context) and set(fresh.message_ids) <= {m.id for m in stored}
    # a call and its return are never split
    called = {c.id for m in context for c in m.tool_calls or ()}
    returned = {r.tool_call_id for m in context for r in m.tool_returns or ()}
    assert returned <= called
    # the summariser's own request fits its window
    for r in summaries:
        assert len(json.dumps(r.body)) // 4 < WINDOW


def test_all_mode_keeps_only_the_system_message_and_summary(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent, _ = chat(db, org, fake, mode="all")
    _, _, context = state_of(db, agent)
    assert any(is_summary_request(r) for r in fake.requests)
    # after the last compaction the context restarts: system, summary, then only newer messages
    assert context[0].role == "system" and json.loads(context[1].text)["type"] == "system_alert"
    assert all((m.sequence_id or 0) > (context[1].sequence_id or 0) for m in context[2:])


def test_cut_moves_back_rather_than_open_on_a_tool_return(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent, _ = chat(db, org, fake)
    _, _, context = state_of(db, agent)
    for share in (0.1, 0.3, 0.5, 0.7, 0.9):
        cut = cut_index(context, CompactionSettings(sliding_window_percentage=share))
        assert 1 <= cut <= len(context)
        if cut < len(context):
            assert context[cut].role != "tool"
