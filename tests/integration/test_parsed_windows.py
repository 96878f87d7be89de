"""A step's claim sends only the window's messages this process has not parsed yet
(store/parsed_windows.py), and reads the window as it is stored: an edited message is
read again, and agents never share what is held."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest

from cairn.domain import Message, Organization, TextContent
from cairn.store import claim, messages
from cairn.store.db import Database
from cairn.store.parsed_windows import WINDOWS, Window
from tests.fakes.llm_server import FakeLLM
from tests.integration.engine_harness import engine_for, make_agent, send, state_of


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


class Claims:
    """Each claim's window as read: (its versions, how many messages the claim sent, the
    window). `claim._window` itself runs; this only looks at what passes through it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[list[str], int, list[Message]]] = []
        self.rows: list[dict[str, Any]] = []
        original = claim._window

        def looked_at(agent_id: str, row: dict[str, Any], held: Window | None) -> Window:
            window = original(agent_id, row, held)
            self.rows.append(row)
            sent = len(json.loads(row["context"]))
            self.seen.append((list(window.versions), sent, list(window.messages)))
            return window

        monkeypatch.setattr(claim, "_window", looked_at)

    def of(self, ids: set[str]) -> list[tuple[list[str], int, list[Message]]]:
        """The claims of the agent whose window holds one of `ids`."""
        return [c for c in self.seen if ids & {v.split("@")[0] for v in c[0]}]


def stored(db: Database, org: str, window: list[Message]) -> list[dict[str, Any]]:
    with db.connection() as conn:
        rows = messages.get_many(conn, org, [m.id for m in window])
    return [m.model_dump() for m in rows]


def test_a_step_parses_only_what_its_window_gained_since_the_agents_last_step(
    db: Database, org: Organization, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    claims = Claims(monkeypatch)
    engine = engine_for(db, fake)
    first, second = make_agent(db, org), make_agent(db, org)
    for n in range(4):  # the two agents' turns in turn: each keeps what it holds
        for agent in (first, second):
            fake.reply(f"{agent.name} reply {n}")
            send(engine, agent, f"{agent.name} turn {n}")
    for agent in (first, second):
        mine = claims.of(set(agent.message_ids))
        assert len(mine) == 4
        versions, sent, _ = mine[0]
        assert sent == len(versions)  # the agent's first step here reads its window whole
        for (before, _, _), (versions, sent, _) in pairwise(mine):
            gained = [v for v in versions if v not in before]
            assert 0 < sent == len(gained) < len(versions)  # only what the last turn added
        assert len(mine[-1][0]) > len(mine[1][0])  # the window grew, what is sent did not
        # and the window read is the window stored, message for message
        window = mine[-1][2]
        assert [m.model_dump() for m in window] == stored(db, org.id, window)


def test_an_edited_message_is_read_again_and_the_model_sees_the_edit(
    db: Database, org: Organization, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    claims = Claims(monkeypatch)
    engine = engine_for(db, fake)
    agent = make_agent(db, org)
    fake.reply("Noted.")
    turn = send(engine, agent, "I saw a heron by the lake")
    fake.reply("Still noted.")
    send(engine, agent, "and then it flew off")
    (said,) = [m for m in turn.new if m.role == "user"]
    with db.transaction() as conn:
        messages.edit(
            conn, said.model_copy(update={"content": [TextContent(text="I saw an egret")]})
        )
    fake.reply("Ah, an egret.")
    send(engine, agent, "what did I see?")
    _, sent, window = claims.seen[-1]
    assert sent == 1 + 2  # the edited message, and the turn before's input and reply
    (edited,) = [m for m in window if m.id == said.id]
    assert edited.search_text() == "I saw an egret"
    asked = json.dumps(fake.requests[-1].body["messages"])
    assert "I saw an egret" in asked and "heron" not in asked
    assert [m.model_dump() for m in window] == stored(db, org.id, window)


def stamp_of(db: Database, agent_id: str) -> int:
    with db.connection() as conn:
        row = conn.execute("SELECT window_stamp FROM agents WHERE id = %s", (agent_id,)).fetchone()
    assert row is not None
    return int(row["window_stamp"])


def test_a_step_reads_only_the_entries_appended_since_its_window_was_read(
    db: Database, org: Organization, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing changed in the window but its new turns: the claim reads the entries after
    the last one held, not the window (migration 0056), and the window is the one stored.
    A process that missed turns (another ran them) reads all it missed."""
    claims = Claims(monkeypatch)
    engine = engine_for(db, fake)
    agent = make_agent(db, org)
    for n in range(3):
        fake.reply(f"reply {n}")
        send(engine, agent, f"turn {n}")
    # As a process that then misses two turns holds it: the window its last claim read,
    # before that turn's own two entries.
    missed = WINDOWS.held(agent.id)
    assert missed is not None
    for n in range(3, 5):
        fake.reply(f"reply {n}")
        send(engine, agent, f"turn {n}")
    steady = claims.rows[1:]
    assert steady and not any(row["whole"] for row in steady)
    assert all(len(row["context_versions"]) == 2 for row in steady)  # the last turn's two
    WINDOWS.keep(agent.id, missed)
    fake.reply("reply 5")
    send(engine, agent, "turn 5")
    assert not claims.rows[-1]["whole"] and len(claims.rows[-1]["context_versions"]) == 2 + 4
    window = claims.seen[-1][2]  # what the window was before this turn's own two
    assert [m.id for m in window] == state_of(db, agent)[0].message_ids[:-2]
    assert [m.model_dump() for m in window] == stored(db, org.id, window)


def test_every_change_to_a_window_but_an_append_moves_its_stamp(
    db: Database, org: Organization, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The triggers of migration 0056: an edit of a message a step reads, an entry removed,
    an entry written before the last; and not an embedding or a rewind's mark. After a
    move, the next claim reads the window whole, as it is stored."""
    claims = Claims(monkeypatch)
    engine = engine_for(db, fake)
    agent = make_agent(db, org)
    fake.reply("Noted.")
    turn = send(engine, agent, "the heron")
    ids = state_of(db, agent)[0].message_ids
    (said,) = [m for m in turn.new if m.role == "user"]

    def moved(statement: str, params: dict[str, Any]) -> bool:
        before = stamp_of(db, agent.id)
        with db.transaction() as conn:
            conn.execute(statement, {"agent": agent.id, "org": org.id, **params})
        return stamp_of(db, agent.id) != before

    with db.connection() as conn:
        position = conn.execute(
            "SELECT max(position) AS p FROM context_entries WHERE agent_id = %s", (agent.id,)
        ).fetchone()["p"]
    vector = "[" + ",".join(["0.1"] * 8) + "]"
    assert not moved(
        "UPDATE messages SET embedding = %(v)s, embedding_model = 'm' WHERE id = %(id)s",
        {"v": vector, "id": said.id},
    )
    assert not moved("UPDATE messages SET rewound_at = now() WHERE id = %(id)s", {"id": said.id})
    assert not moved(  # an append
        "INSERT INTO context_entries (agent_id, position, message_id, organization_id)"
        " VALUES (%(agent)s, %(p)s, %(id)s, %(org)s)",
        {"p": position + 5, "id": said.id},
    )
    assert moved(
        "UPDATE messages SET content = content WHERE id = %(id)s",
        {"id": ids[0]},
    )
    assert moved(  # before the last entry
        "INSERT INTO context_entries (agent_id, position, message_id, organization_id)"
        " VALUES (%(agent)s, %(p)s, %(id)s, %(org)s)",
        {"p": position + 2, "id": said.id},
    )
    assert moved(
        "DELETE FROM context_entries WHERE agent_id = %(agent)s AND position > %(p)s",
        {"p": position},
    )
    fake.reply("Still noted.")
    send(engine, agent, "and the egret")
    assert claims.rows[-1]["whole"]
    window = claims.seen[-1][2]
    assert [m.model_dump() for m in window] == stored(db, org.id, window)


def test_a_window_held_for_another_agent_is_never_read_as_this_ones(
    db: Database, org: Organization, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two agents at the same stamp: the held window of one, sent with the other's claim,
    reads the other's window whole."""
    claims = Claims(monkeypatch)
    engine = engine_for(db, fake)
    first, second = make_agent(db, org), make_agent(db, org)
    for agent in (first, second):
        fake.reply("ok")
        send(engine, agent, f"hello from {agent.name}")
    assert stamp_of(db, first.id) == stamp_of(db, second.id)
    WINDOWS.keep(second.id, WINDOWS.held(first.id))  # type: ignore[arg-type]
    fake.reply("ok again")
    send(engine, second, "and again")
    assert claims.rows[-1]["whole"]
    window = claims.seen[-1][2]
    assert [m.id for m in window] == state_of(db, second)[0].message_ids[:-2]


def test_the_agents_tools_are_read_again_only_when_one_changes(
    db: Database, org: Organization, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held tools are not sent again; a tool changed since is, and the step reads it as it
    is now."""
    claims = Claims(monkeypatch)
    engine = engine_for(db, fake)
    agent = make_agent(db, org)
    for n in range(2):
        fake.reply(f"reply {n}")
        send(engine, agent, f"turn {n}")
    assert claims.rows[0]["tools"] is not None and claims.rows[-1]["tools"] is None
    with db.transaction() as conn:
        conn.execute(
            "UPDATE tools SET json_schema = jsonb_set(json_schema, '{description}',"
            " '\"Says a heron was seen.\"') WHERE id = (SELECT tool_id FROM agents_tools"
            " WHERE agent_id = %s ORDER BY attached_at LIMIT 1)",
            (agent.id,),
        )
    fake.reply("reply 2")
    send(engine, agent, "turn 2")
    assert claims.rows[-1]["tools"] is not None
    held = WINDOWS.held(agent.id)
    assert held is not None and held.tools_version == claims.rows[-1]["tools_version"]
    described = [t.json_schema.get("description") for t in held.tools]
    assert described.count("Says a heron was seen.") == 1
