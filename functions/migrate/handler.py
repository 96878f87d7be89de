"""CloudFormation custom resource (CDK Provider framework): apply migrations on deploy.

Create and Update apply every pending migration; Delete leaves the database alone (the data
outlives the stack's custom resource). The runner is safe to run twice and concurrently.

Invoked by hand with `{"action": "create_tenant", "organization": ..., "user": ...}` it
creates an organization and its first API key (the README's deploy guide): this function
is the one that can reach the database before any key exists. With `{"action":
"set_tool_hosts", "organization_id": ..., "hosts": [...]}` it sets the hosts that
organization's custom tools may reach (the operator's decision, never a tenant's).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.config import Settings
from cairn.orchestration.secrets import database_dsn
from cairn.services.tenants import create_tenant, set_tool_hosts
from cairn.store.db import Database
from cairn.store.migrate import apply_migrations

logger = Logger(service="cairn-migrate")
PHYSICAL_ID = "cairn-schema-migrations"


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("action") == "create_tenant":
        db = Database(database_dsn(Settings.from_env()))
        try:
            return create_tenant(
                db, event.get("organization") or "default", event.get("user") or "admin"
            )
        finally:
            db.close()
    if event.get("action") == "set_tool_hosts":
        db = Database(database_dsn(Settings.from_env()))
        try:
            return set_tool_hosts(db, str(event.get("organization_id")), event.get("hosts"))
        finally:
            db.close()
    request_type = event.get("RequestType")
    if request_type == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId", PHYSICAL_ID)}
    if request_type not in ("Create", "Update"):
        raise ValueError(f"unexpected RequestType {request_type!r}")
    applied = apply_migrations(database_dsn(Settings.from_env()))
    logger.info("migrations applied", extra={"applied": applied})
    return {
        "PhysicalResourceId": PHYSICAL_ID,
        "Data": {"Applied": ",".join(applied) or "none", "Count": len(applied)},
    }
