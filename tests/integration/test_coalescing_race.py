"""Coalescing against the claim, on the real store: a send joining a waiting run while that
run's first step is being claimed is either in the step's turn or in a run of its own,
never lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from cairn.domain import Organization
from cairn.domain.runs import RunOptions
from cairn.run.driving import lifecycle
from cairn.run.steps.step import StepOutcome
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM
from tests.integration.engine_harness import (
    engine_for,
    make_agent,
    someone_waits_for_a_lock,
    user,
)

COALESCING = RunOptions(coalesce=True)


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def turn_texts(fake: FakeLLM) -> list[str]:
    return [str(m["content"]) for m in fake.requests[-1].body["messages"] if m["role"] == "user"]


def test_a_send_joining_while_the_claim_waits_for_it_is_in_the_turn(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    """The claim reads the run under its statement's snapshot, then waits for the joining
    send's lock on the agent: the step must read the inputs again after its lease."""
    engine = engine_for(db, fake)
    agent = make_agent(db, org, metadata={"cairn_coalesce_seconds": 0.05})
    fake.reply("both seen")
    first = lifecycle.start_run(db, org.id, agent.id, [user(agent, "one")], COALESCING)
    until = first.run.request_config["coalesce_until"]
    assert until
    time.sleep(0.1)  # past the window: a claim now takes the lease
    outcome: list[StepOutcome] = []
    with db.transaction() as conn:
        joined = lifecycle.start_run(
            db, org.id, agent.id, [user(agent, "two")], COALESCING, conn=conn
        )
        assert joined.joined and joined.run.id == first.run.id
        claiming = threading.Thread(
            target=lambda: outcome.append(engine.step(org.id, first.run.id, 0))
        )
        claiming.start()
        deadline = time.monotonic() + 30
        while not someone_waits_for_a_lock(db):  # the claim is blocked behind this transaction
            assert time.monotonic() < deadline, "the claim never waited for the join"
            time.sleep(0.01)
    claiming.join(60)
    assert outcome and outcome[0].status == "committed"
    texts = turn_texts(fake)
    assert any(t.endswith("one") for t in texts) and any(t.endswith("two") for t in texts), texts


def test_a_send_after_the_first_step_was_claimed_starts_a_run_of_its_own(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    engine = engine_for(db, fake)
    agent = make_agent(db, org, metadata={"cairn_coalesce_seconds": 0.05})
    fake.reply("first")
    first = lifecycle.start_run(db, org.id, agent.id, [user(agent, "one")], COALESCING)
    assert engine.step(org.id, first.run.id, 0).status == "committed"  # waits out the window
    later = lifecycle.start_run(db, org.id, agent.id, [user(agent, "two")], COALESCING)
    assert not later.joined and later.run.id != first.run.id
    # And a send that does not ask to coalesce (a group's, a batch's) never joins.
    third = lifecycle.start_run(db, org.id, agent.id, [user(agent, "three")], RunOptions())
    assert not third.joined and "coalesce_until" not in third.run.request_config
