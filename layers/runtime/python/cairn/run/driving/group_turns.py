"""Round-robin groups, the next turn: started from the queue when the last turn's run ended
(run/driving/group_chat.py says how a chain goes)."""

from __future__ import annotations

from typing import Any

from cairn.domain.runs import RunOptions
from cairn.run.driving import group_chat, lifecycle
from cairn.run.driving.dispatch import publish_and_mark
from cairn.run.runtime import Runtime
from cairn.store import runs
from cairn.store.db import DuplicateKey


def start_turn(rt: Runtime, payload: dict[str, Any]) -> str:
    """Start turn `turn` of a chain, once: a redelivery finds the run it started (whose
    first step, if its publish was lost, the sweeper delivers from the outbox)."""
    org, chain, turn = payload["organization_id"], payload["chain"], payload["turn"]
    run_id = group_chat.turn_run_id(chain, turn)
    with rt.db.connection() as conn:
        existing = runs.get_run(conn, org, run_id)
    if existing is not None:
        return "already started"
    found = group_chat.next_turn(rt.db, org, payload["group_id"], chain, turn)
    if found is None:
        return "chain ended"
    group, inputs = found
    options = RunOptions(
        background=True,
        run_id=run_id,
        metadata=group_chat.chain_metadata(group, chain, turn, payload["turns"]),
    )
    try:
        started = lifecycle.start_run(
            rt.db,
            org,
            group_chat.speaker(group, turn),
            inputs,
            options,
            org_cap=rt.settings.org_max_runs,
        )
    except DuplicateKey:  # a delivery beside this one started it a moment ago
        return "already started"
    publish_and_mark(rt.db, rt.queue, started.command)
    return "started"
