"""Message embeddings, computed after the checkpoint and never on a step's path.

A checkpoint that stored searchable messages also writes an `embed` command; a worker runs
it (`embed_agent`), and the sweeper backfills whatever was missed (`backfill`). Writing an
embedding only where none exists yet makes both idempotent.
"""

from __future__ import annotations

import json
import logging

from cairn.config import Settings
from cairn.run.steps.step import Engine
from cairn.store import dead_letters, embedding_holds, messages

logger = logging.getLogger(__name__)
BATCH = 128
MAX_DELAY = 6 * 3600.0


class EmbeddingFailed(Exception):
    """The agent's embedding endpoint failed and the agent is held back: its next try is
    the hold's to make, not a redelivery's."""


def embed_agent(engine: Engine, org_id: str, agent_id: str, *, max_batches: int = 20) -> int:
    """Embed the agent's messages that have none yet; returns how many were written.

    An agent held back after failures is skipped. A failure holds it back (and raises
    EmbeddingFailed):
    its jobs and the backfill try it again after a delay that doubles, until its last
    allowed try; then a dead letter says why, and a changed embedding_config starts it
    again (store.embedding_holds)."""
    written, failing = 0, False
    for _ in range(max_batches):
        with engine.db.connection() as conn:
            found = messages.to_embed(conn, org_id, agent_id, BATCH)
        if found is None or found.held or not found.texts:
            break
        failing = failing or found.failing
        try:  # a config refused before any request counts as a failure too
            embedder = engine.embedder_for(found.config, org_id)
            vectors = embedder.embed([text for _, text in found.texts])
        except Exception as err:
            _hold_back(engine, org_id, agent_id, err)
            raise EmbeddingFailed(f"{type(err).__name__}: {err}") from err
        with engine.db.connection() as conn:
            written += messages.set_embeddings(
                conn,
                org_id,
                agent_id,
                embedder.model,
                [(i, v) for (i, _), v in zip(found.texts, vectors, strict=True)],
            )
        if len(found.texts) < BATCH:
            break
    if failing:
        with engine.db.connection() as conn:
            embedding_holds.release(conn, org_id, agent_id)
    return written


def retry_delays(settings: Settings) -> list[float]:
    """The waits after each failure but the last allowed: doubling, at most MAX_DELAY."""
    first = settings.embed_retry_seconds
    return [min(first * 2**i, MAX_DELAY) for i in range(settings.embed_max_tries - 1)]


def _hold_back(engine: Engine, org_id: str, agent_id: str, err: Exception) -> None:
    why = f"{type(err).__name__}: {err}"
    with engine.db.transaction() as conn:
        hold = embedding_holds.record_failure(
            conn, org_id, agent_id, why, retry_delays(engine.settings)
        )
        if hold is None or not hold.stopped:
            return
        reason = (
            f"embeddings stopped after {hold.failures} failures of the agent's embedding "
            f"endpoint (last: {why[:500]}); they start again when its embedding_config "
            "changes"
        )
        body = json.dumps({"kind": "embed", "organization_id": org_id, "agent_id": agent_id})
        dead_letters.record(conn, "embeddings", body, reason, hold.failures)
    logger.error("agent %s: %s", agent_id, reason)


def backfill(engine: Engine, *, agents_per_sweep: int = 20) -> tuple[int, dict[str, str]]:
    """Embed what is missing, agent by agent; returns (written, {agent id: why it failed}).

    One agent's failure (its embedding model gone, its provider down) is reported and the
    others go on; the agents are taken in no fixed order, so failing ones cannot keep the
    rest waiting sweep after sweep."""
    with engine.db.connection() as conn:
        found = messages.agents_to_embed(conn, agents_per_sweep)
    written, failed = 0, {}
    for org, agent in found:
        try:
            written += embed_agent(engine, org, agent)
        except Exception as err:
            logger.warning("embedding agent %s failed: %s", agent, err)
            failed[agent] = f"{type(err).__name__}: {err}"[:500]
    return written, failed
