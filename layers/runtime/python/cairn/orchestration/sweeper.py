"""The sweeper's rounds (EventBridge schedule on AWS, a timer locally), each phase on its own.

A phase that fails is reported by name and the others still run: a provider that is down
for one agent's embeddings must not stop the outbox from being swept or stalled runs from
being ended.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cairn.engine.embedding_jobs import backfill
from cairn.orchestration.assembly.parts import Runtime
from cairn.orchestration.dispatch import prune, sweep
from cairn.orchestration.schedules import fire_due
from cairn.orchestration.watchdog import redrive_stalled, resume_files
from cairn.store import telegram

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
    # Messages whose embedding job was lost or failed (jobs have no outbox row), or that
    # were stored while no embedder was reachable.
    phase("embedded", lambda: _backfill(rt, errors))
    # Scheduled messages due (on AWS EventBridge Scheduler fires them on time; this is the
    # fallback, and the local stack's only way: an occurrence starts its run once).
    phase("scheduled", lambda: fire_due(rt))
    # Files whose processing stopped (its job lost, or killed mid-way): their jobs again.
    phase("files", lambda: resume_files(rt))
    phase("pruned", lambda: prune(rt.db, retention_days=rt.settings.outbox_retention_days))
    phase("telegram_updates", lambda: _prune_updates(rt))
    if errors:
        done["errors"] = errors
    return done


def _backfill(rt: Runtime, errors: dict[str, str]) -> int:
    written, failed = backfill(rt.engine)
    for agent_id, why in failed.items():
        errors[f"embedded:{agent_id}"] = why
    return written


# Telegram keeps an update it could not deliver for 24 hours: after two days its id can no
# longer come back, and the record of having taken it goes.
TELEGRAM_UPDATE_DAYS = 2


def _prune_updates(rt: Runtime) -> int:
    with rt.db.connection() as conn:
        return telegram.prune_updates(conn, older_than_seconds=TELEGRAM_UPDATE_DAYS * 86_400)
