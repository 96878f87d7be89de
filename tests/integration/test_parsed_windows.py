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
from tests.fakes.llm_server import FakeLLM
from tests.integration.engine_harness import engine_for, make_agent, send


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


class Claims:
    """Each claim's window as read: (its versions, how many messages the claim sent, the
    window). `claim._window` itself runs; this only looks at what passes through it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[list[str], int, list[Message]]] = []
        original = claim._window

        def looked_at(versions: list[str], sent_json: str, held: dict[str, Any]) -> list[Message]:
            window = original(versions, sent_json, held)
            self.seen.append((list(versions), len(json.loads(sent_json)), window))
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
