"""EventBridge schedule -> republish what a crash left unsent in the outbox, re-drive or end
runs that stalled, backfill embeddings, fire scheduled messages due, delete outbox rows sent
long ago. EventBridge Scheduler -> one scheduled message's occurrence, on time."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn import tracing
from cairn.assembly.build import runtime
from cairn.config import Settings
from cairn.run.driving.schedules import fire_one
from cairn.run.driving.sweeper import sweep_once

logger = Logger(service="cairn-sweeper")


@logger.inject_lambda_context(clear_state=True)
@tracing.flushed
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("action") == "fire_schedule":  # EventBridge Scheduler: one occurrence
        occurrence = datetime.fromisoformat(str(event["occurrence"]).replace("Z", "+00:00"))
        fired = fire_one(runtime(), event["organization_id"], event["schedule_id"], occurrence)
        logger.info("schedule fired", extra={"schedule_id": event["schedule_id"], "started": fired})
        return {"started": fired}
    rt = runtime()
    if quiet(rt.settings):
        logger.info("sweep skipped: no function ran lately")
        return {"skipped": f"no function ran in {rt.settings.sweep_activity_seconds:g} s"}
    done = sweep_once(rt)
    logger.info("sweep done", extra=done)
    return done


def quiet(settings: Settings) -> bool:
    """Nothing ran for long enough that a round could find nothing (the small shape: a
    round would wake its paused database for nothing). The window covers a stalled run's
    wait and two sweeps, so whatever the last activity left is swept."""
    names = [n for n in settings.sweep_activity_functions.split(",") if n]
    if not names:
        return False
    from cairn.adapters.aws.activity import ran_within

    return not ran_within(names, settings.sweep_activity_seconds)
