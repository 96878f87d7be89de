"""The sweeper's rounds (EventBridge schedule on AWS, a timer locally), each phase on its own.

A phase that fails is reported by name and the others still run: a provider that is down
for one agent's embeddings must not stop the outbox from being swept or stalled runs from
being ended.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from cairn.run.driving.dispatch import prune, sweep
from cairn.run.driving.schedules import fire_due
from cairn.run.driving.watchdog import redrive_stalled, resume_files
from cairn.run.runtime import Runtime
from cairn.store import history

logger = logging.getLogger(__name__)


def sweep_once(rt: Runtime) -> dict[str, Any]:
    """Run every phase; returns what each did, and `errors` naming the phases that failed."""
    done: dict[str, Any] = {}
    errors: dict[str, str] = {}

    def phase(name: str, work: Callable[[], Any]) -> None:
        try:
            done[name] = work()
        except Exception as err:
            logger.exception("sweeper phase %s failed", name)
            errors[name] = f"{type(err).__name__}: {err}"[:500]

    # Unsent outbox rows first: a crash between commit and publish is the common case.
    phase("republished", lambda: sweep(rt.db, rt.queue))
    phase("watchdog", lambda: redrive_stalled(rt, stall_seconds=rt.settings.run_stall_seconds))
    # Scheduled messages due (on AWS EventBridge Scheduler fires them on time; this is the
    # fallback, and the local stack's only way: an occurrence starts its run once).
    phase("scheduled", lambda: fire_due(rt))
    # Files whose processing stopped (its job lost, or killed mid-way): their jobs again.
    phase("files", lambda: resume_files(rt))
    phase("pruned", lambda: prune(rt.db, retention_days=rt.settings.outbox_retention_days))
    phase(
        "history", lambda: history.prune(rt.db, retention_days=rt.settings.history_retention_days)
    )
    # The edges' and jobs' own (the embeddings' backfill, a channel's records), given at
    # assembly.
    for name, work in rt.extensions.sweep:
        phase(name, partial(work, rt, errors))
    if errors:
        done["errors"] = errors
    return done
