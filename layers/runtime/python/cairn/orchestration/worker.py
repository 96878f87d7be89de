"""The step worker: one queue message is one step; a dead-lettered one fails its run."""

from __future__ import annotations

import json
import logging
from typing import Any

from cairn.domain.runs import OutboxCommand
from cairn.engine.embedding_jobs import embed_agent
from cairn.engine.step import Engine
from cairn.orchestration.dispatch import after_step, wake
from cairn.orchestration.parts import Runtime
from cairn.orchestration.ports import StepQueue
from cairn.store import outbox, runs

logger = logging.getLogger(__name__)


def parse(body: str) -> dict[str, Any]:
    payload = json.loads(body)
    needed = (
        {"organization_id", "agent_id"}
        if payload.get("kind") == "embed"
        else {"organization_id", "run_id", "step_index"}
    )
    missing = needed - set(payload)
    if missing:
        raise ValueError(f"step message without {sorted(missing)}: {body[:200]}")
    return payload


def run_step(rt: Runtime, payload: dict[str, Any]) -> str:
    """Run the step a message names; raises (so the queue redelivers) on transient failures."""
    if payload.get("kind") == "embed":
        written = embed_agent(rt.engine, payload["organization_id"], payload["agent_id"])
        return f"embedded {written}"
    org, run_id, index = payload["organization_id"], payload["run_id"], payload["step_index"]
    command = _command(rt, org, run_id, index)
    outcome = rt.engine.step(org, run_id, index)
    after_step(rt.db, rt.queue, command, outcome)
    return outcome.status


def dead_letter(rt: Runtime, payload: dict[str, Any], receives: int) -> None:
    fail_dead_step(rt.engine, rt.queue, payload, receives)


def fail_dead_step(
    engine: Engine, queue: StepQueue, payload: dict[str, Any], receives: int
) -> None:
    """A step that kept failing: end its run as failed, with the reason, and free its agent."""
    org, run_id, index = payload["organization_id"], payload["run_id"], payload["step_index"]
    reason = f"step {index} failed on each of {receives} deliveries; see the step function logs"
    ended = engine.fail_run(org, run_id, "error", reason)
    logger.error("run %s failed: %s", run_id, reason)
    if ended is not None:
        wake(engine.db, queue, org, ended.agent_id)


def _command(rt: Runtime, org: str, run_id: str, index: int) -> OutboxCommand:
    with rt.db.connection() as conn:
        stored = outbox.by_dedup_key(conn, org, f"{run_id}:{index}")
    if stored is not None:
        return stored
    # A message without its outbox row (published by hand): act on it all the same.
    with rt.db.connection() as conn:
        run = runs.get_run(conn, org, run_id)
    if run is None:
        raise ValueError(f"step message for unknown run {run_id}")
    return OutboxCommand(
        organization_id=org,
        agent_id=run.agent_id,
        run_id=run_id,
        kind="step",
        payload={"organization_id": org, "run_id": run_id, "step_index": index},
        dedup_key=f"{run_id}:{index}",
    )
