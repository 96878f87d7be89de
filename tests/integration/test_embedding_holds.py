"""An agent whose embedding endpoint keeps failing: held back with a doubling delay, stopped
after a bounded number of tries with a dead letter saying why, started again by a changed
embedding_config (issue: the details Letta's own clients rely on)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cairn.assembly.build import engine_ports
from cairn.config import Settings
from cairn.domain import Organization
from cairn.domain.agents import Agent
from cairn.domain.configs import EmbeddingConfig
from cairn.jobs.embedding_jobs import backfill, embed_agent, retry_delays
from cairn.run.steps.step import Engine
from cairn.store import agents, dead_letters, embedding_holds, messages
from cairn.store.db import Database
from cairn.tools.subprocess_sandbox import SubprocessSandbox
from tests.fakes.llm_server import FakeLLM
from tests.integration.engine_harness import make_agent, send


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def engine(db: Database, fake: FakeLLM, **settings: object) -> Engine:
    made = Settings(
        openai_api_key="sk-test",
        openai_base_url=f"{fake.base_url}/v1",
        llm_max_retries=0,
        llm_timeout_seconds=10,
        **settings,  # type: ignore[arg-type]
    )
    return Engine(db, made, sandbox=SubprocessSandbox(), **engine_ports(made))


def embedded_agent(db: Database, org: Organization, fake: FakeLLM, model: str) -> Agent:
    config = EmbeddingConfig(
        embedding_model=model,
        embedding_endpoint_type="openai",
        embedding_endpoint=f"{fake.base_url}/v1",
        embedding_dim=64,
    )
    return make_agent(db, org, embedding_config=config)


def come_due(db: Database, agent: Agent) -> None:
    """The hold's wait over (as time passing would make it)."""
    with db.connection() as conn:
        conn.execute(
            "UPDATE embedding_holds SET next_try_at = now() - interval '1 second' "
            "WHERE agent_id = %s AND next_try_at IS NOT NULL",
            (agent.id,),
        )


def test_retry_delays_double_up_to_six_hours_and_are_bounded() -> None:
    delays = retry_delays(Settings(embed_retry_seconds=60, embed_max_tries=12))
    assert delays[:4] == [60, 120, 240, 480] and max(delays) == 6 * 3600 and len(delays) == 11


def test_a_failing_endpoint_backs_off_stops_and_starts_again_on_a_new_config(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    eng = engine(db, fake, embed_retry_seconds=3600, embed_max_tries=3)
    agent = embedded_agent(db, org, fake, "text-embedding-3-small")
    fake.reply("Noted.")
    send(eng, agent, "I like green tea")
    fake.embedding_failures = 100

    with pytest.raises(Exception, match="embeddings are down"):
        embed_agent(eng, org.id, agent.id)
    asked = len(fake.embedding_requests)
    # Held: the agent's next jobs and the sweeper's backfill make no request.
    assert embed_agent(eng, org.id, agent.id) == 0
    assert backfill(eng) == (0, {})
    assert len(fake.embedding_requests) == asked
    with db.connection() as conn:
        hold = embedding_holds.get(conn, org.id, agent.id)
    assert hold is not None and hold.failures == 1 and not hold.stopped
    assert "embeddings are down" in hold.last_error

    for failures in (2, 3):  # each wait over, one more try, until the last allowed
        come_due(db, agent)
        written, failed = backfill(eng)
        assert written == 0 and "embeddings are down" in failed[agent.id]
        with db.connection() as conn:
            hold = embedding_holds.get(conn, org.id, agent.id)
        assert hold is not None and hold.failures == failures
    assert hold.stopped
    with db.connection() as conn:
        letters = [r for r in dead_letters.latest(conn) if agent.id in r["body"]]
    assert [r["source"] for r in letters] == ["embeddings"]
    assert "stopped after 3 failures" in letters[0]["reason"]
    assert "embedding_config" in letters[0]["reason"] and letters[0]["receives"] == 3
    asked = len(fake.embedding_requests)
    come_due(db, agent)  # stopped is no wait: nothing brings it back but a new config
    assert embed_agent(eng, org.id, agent.id) == 0 and backfill(eng) == (0, {})
    assert len(fake.embedding_requests) == asked

    fake.embedding_failures = 0
    with db.transaction() as conn:
        current = agents.get(conn, org.id, agent.id)
        assert current is not None and current.embedding_config is not None
        config = current.embedding_config.model_copy(update={"embedding_model": "other-model"})
        agents.update(
            conn,
            current.model_copy(update={"embedding_config": config}),
            expected_version=current.version,
        )
    assert embed_agent(eng, org.id, agent.id) > 0
    with db.connection() as conn:
        assert embedding_holds.get(conn, org.id, agent.id) is None  # a success ends the hold
        left = messages.to_embed(conn, org.id, agent.id, 10)
    assert left is not None and left.texts == []


def test_one_held_agent_does_not_hold_the_others(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    eng = engine(db, fake, embed_retry_seconds=3600)
    broken = embedded_agent(db, org, fake, "text-embedding-3-small")
    healthy = embedded_agent(db, org, fake, "text-embedding-3-small")
    for agent in (broken, healthy):
        fake.reply("Noted.")
        send(eng, agent, "I like green tea")
    fake.embedding_failures = 1
    with pytest.raises(Exception, match="embeddings are down"):
        embed_agent(eng, org.id, broken.id)
    written, failed = backfill(eng)
    assert written > 0 and failed == {}
    with db.connection() as conn:
        assert messages.to_embed(conn, org.id, healthy.id, 10).texts == []  # type: ignore[union-attr]
        hold = embedding_holds.get(conn, org.id, broken.id)
    assert hold is not None and hold.failures == 1 and not hold.stopped
