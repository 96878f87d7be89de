"""CloudFormation custom resource (CDK Provider framework): apply migrations on deploy.

Create and Update apply every pending migration; Delete leaves the database alone (the data
outlives the stack's custom resource). The runner is safe to run twice and concurrently.

With `{"action": ...}` it runs an operator's command (`cairn-admin`, README "Operating"):
organizations and their API keys, the hosts an organization's tools may reach. This
function is the one that reaches the database before any key exists.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.adapters.aws.secrets import app_password, database_dsn
from cairn.config import Settings
from cairn.store.db import Database
from cairn.store.migrate import allow_iam_login, allow_login, apply_migrations

logger = Logger(service="cairn-migrate")
PHYSICAL_ID = "cairn-schema-migrations"
# On a first deploy the proxy may have no registered target for a while after CloudFormation
# calls it created: connecting is retried (5 s, doubling to 30 s) while this invocation has
# time, rather than failing the deploy on the first refusal.
RETRY_FIRST_SECONDS, RETRY_MOST_SECONDS, KEEP_SECONDS = 5.0, 30.0, 20.0


def _until_reachable(apply: Callable[[], list[str]], context: LambdaContext) -> list[str]:
    wait = RETRY_FIRST_SECONDS
    while True:
        try:
            return apply()
        except psycopg.OperationalError as err:
            left = context.get_remaining_time_in_millis() / 1000
            if left - wait < KEEP_SECONDS:
                raise
            logger.warning("database not reachable yet; retrying", extra={"error": str(err)})
            time.sleep(wait)
            wait = min(wait * 2, RETRY_MOST_SECONDS)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("action"):  # an operator's command (cairn-admin), not CloudFormation
        # Loaded for a command only: the services and the Letta import are half the cold
        # start a deploy's migration would pay for nothing (docs/numbers.md).
        from cairn.assembly.operator import operate

        db = Database(database_dsn(Settings.from_env()))
        try:
            # A long command (a Letta import) leaves off with time to answer; run again.
            return operate(db, event, stop=lambda: context.get_remaining_time_in_millis() < 30_000)
        finally:
            db.close()
    request_type = event.get("RequestType")
    if request_type == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId", PHYSICAL_ID)}
    if request_type not in ("Create", "Update"):
        raise ValueError(f"unexpected RequestType {request_type!r}")
    settings = Settings.from_env()
    applied = _until_reachable(lambda: apply_migrations(database_dsn(settings)), context)
    logger.info("migrations applied", extra={"applied": applied})
    if (password := app_password(settings)) is not None:
        allow_login(database_dsn(settings), password)  # the functions' role, for the proxy
    elif settings.db_app_iam:
        allow_iam_login(database_dsn(settings))  # the functions' role, with IAM tokens
    return {
        "PhysicalResourceId": PHYSICAL_ID,
        "Data": {"Applied": ",".join(applied) or "none", "Count": len(applied)},
    }
