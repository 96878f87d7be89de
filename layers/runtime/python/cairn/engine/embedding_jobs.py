"""Message embeddings, computed after the checkpoint and never on a step's path.

A checkpoint that stored searchable messages also writes an `embed` command; a worker runs
it (`embed_agent`), and the sweeper backfills whatever was missed (`backfill`). Writing an
embedding only where none exists yet makes both idempotent.
"""

from __future__ import annotations

import logging

from cairn.engine.step import Engine
from cairn.store import messages

logger = logging.getLogger(__name__)
BATCH = 128


def embed_agent(engine: Engine, org_id: str, agent_id: str, *, max_batches: int = 20) -> int:
    """Embed the agent's messages that have none yet; returns how many were written."""
    written = 0
    for _ in range(max_batches):
        with engine.db.connection() as conn:
            found = messages.to_embed(conn, org_id, agent_id, BATCH)
        if found is None or not found.texts:
            break
        embedder = engine.embedder_for(found.config)
        vectors = embedder.embed([text for _, text in found.texts])
        with engine.db.connection() as conn:
            written += messages.set_embeddings(
                conn,
                org_id,
                embedder.model,
                [(i, v) for (i, _), v in zip(found.texts, vectors, strict=True)],
            )
        if len(found.texts) < BATCH:
            break
    return written


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
