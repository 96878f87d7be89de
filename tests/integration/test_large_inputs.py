"""Large messages reach the database whole: a 9 MB checkpoint once hung in a pipeline sync
(psycopg stopped flushing a pipeline's last, oversized statement; `store.db.pipeline`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from cairn.domain import Organization
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM
from tests.integration.engine_harness import engine_for, make_agent, send


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def test_a_nine_megabyte_checkpoint_completes(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org, context_window=10_000_000)
    asked, answer = "q" * 4_500_000, "a" * 4_500_000
    fake.reply(answer)
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(send(engine_for(db, fake), agent, asked)))
    worker.start()
    worker.join(60)  # a hang fails here instead of holding the suite
    assert done, "the step did not finish within 60 s"
    turn = done[0]
    assert turn.run.status == "completed"  # type: ignore[attr-defined]
    assert [m.text for m in turn.new] == [asked, answer]  # type: ignore[attr-defined]
    with db.connection() as conn:  # the pooled connection went back whole and usable
        assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
