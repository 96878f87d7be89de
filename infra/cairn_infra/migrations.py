"""Migrations on every deploy that changes them, before any new code serves traffic."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from aws_cdk import CustomResource, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import custom_resources as cr

from cairn_infra.database import Database
from cairn_infra.packaging import ROOT


def migrate_on_deploy(stack: Stack, by: Mapping[str, lambda_.Function], database: Database) -> None:
    """A custom resource calling the migrate function whenever the .sql files change; in the
    stack's own scope, so its resources keep their logical ids."""
    provider = cr.Provider(stack, "MigrationsProvider", on_event_handler=by["migrate"])
    migrations = CustomResource(
        stack,
        "Migrations",
        service_token=provider.service_token,
        properties={"migrations": migrations_hash()},
    )
    # Not before the database can answer through the proxy: the cluster's instances and
    # the proxy's target group, not only the proxy (which its endpoint alone implies).
    migrations.node.add_dependency(database.cluster)
    if database.proxy is not None:
        migrations.node.add_dependency(database.proxy)
    # New code only after its schema: during a deploy the old code runs beside the new
    # schema (migrations expand, then a later release contracts: docs/deploy.md), never
    # the new code beside the old schema.
    for key, fn in by.items():
        if key not in ("migrate", "sandbox"):
            fn.node.add_dependency(migrations)


def migrations_hash() -> str:
    folder = ROOT / "layers" / "runtime" / "python" / "cairn" / "store" / "migrations"
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.sql")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()
