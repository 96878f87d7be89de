"""An operator's action by name: the migrate function's payload and `cairn-admin` both come
here. The tenants' actions are the tenants service's; an edge's (a Letta import) are in its
record, given the parts assembly chooses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cairn.adapters.aws import bedrock
from cairn.adapters.aws.secrets import sealing_key
from cairn.adapters.chosen import documents_for, vault_for
from cairn.assembly.edges import EDGES
from cairn.config import Settings
from cairn.errors import InvalidArgumentError
from cairn.letta_import.edge import run_import
from cairn.letta_import.report import Progress, Report
from cairn.run.edge import OperatorParts
from cairn.run.provider_vault import ProviderVault
from cairn.sealing import Sealer
from cairn.services import limits, usage
from cairn.services.tenants import (
    create_key,
    create_tenant,
    list_keys,
    list_tenants,
    revoke_key,
    rotate_key,
    set_tool_hosts,
)
from cairn.store.db import Database


def operate(
    db: Database, event: dict[str, Any], *, stop: Callable[[], bool] | None = None
) -> dict[str, Any]:
    """An operator's action by name (the migrate function's payload, `cairn-admin`); `stop`
    says when a long one (import_letta) must leave off, to be run again."""
    action, org = event.get("action"), str(event.get("organization_id") or "")
    if action in EDGE_ACTIONS:
        return EDGE_ACTIONS[str(action)](db, event, operator_parts(), stop)
    if action == "create_tenant":
        return create_tenant(
            db, event.get("organization") or "default", event.get("user") or "admin"
        )
    if action == "list_tenants":
        return list_tenants(db)
    if action == "set_tool_hosts":
        return set_tool_hosts(db, org, event.get("hosts"))
    if action == "list_keys":
        return list_keys(db, org)
    if action == "create_key":
        return create_key(db, org, str(event.get("name") or ""))
    if action == "revoke_key":
        return revoke_key(db, org, str(event.get("key_id") or ""))
    if action == "rotate_key":
        return rotate_key(db, org, str(event.get("key_id") or ""))
    if action == "usage":
        return usage_report(db, event)
    if action == "limits":
        return set_limits(db, org, event)
    raise InvalidArgumentError(f"unknown action {action!r}: one of {', '.join(ACTIONS)}")


CORE_ACTIONS = (
    "create_tenant",
    "list_tenants",
    "set_tool_hosts",
    "list_keys",
    "create_key",
    "revoke_key",
    "rotate_key",
    "usage",
    "limits",
)
EDGE_ACTIONS = {name: act for e in EDGES for name, act in e.actions.items()}
ACTIONS = (*CORE_ACTIONS, *EDGE_ACTIONS)


def operator_parts(
    settings: Settings | None = None,
    *,
    vault: ProviderVault | None = None,
    sealer: Sealer | None = None,
    progress: Progress | None = None,
) -> OperatorParts:
    """The parts the settings choose, as the API's: providers' keys in its vault, agents'
    secrets sealed with its key, files' originals in its store."""
    settings = settings or Settings.from_env()
    bedrock.install()  # an action may embed (a Letta import's passages), maybe on Bedrock
    return OperatorParts(
        settings,
        vault or vault_for(settings),
        sealer or Sealer(sealing_key(settings)),
        documents_for(settings),
        progress,
    )


def set_limits(db: Database, org: str, event: dict[str, Any]) -> dict[str, Any]:
    """An organization's budgets and limits: those named in the event set (0 or null: none),
    the others kept; answers them all with this month's use."""
    asked = {k: event[k] for k in limits.KINDS if k in event}
    if not asked:
        return limits.show(db, org)
    return limits.change(db, org, asked, share=Settings.from_env().org_max_runs)


def usage_report(db: Database, event: dict[str, Any]) -> dict[str, Any]:
    """Every organization's usage (or one's: `organization_id`), days `start_date` to
    `end_date` (ISO dates; the last 30 by default)."""
    from datetime import date

    def day(name: str) -> date | None:
        value = event.get(name)
        try:
            return date.fromisoformat(value) if value else None
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"{name}: a date as YYYY-MM-DD") from None

    return usage.report(
        db,
        event.get("organization_id") or None,
        start=day("start_date"),
        end=day("end_date"),
        overrides=Settings.from_env().prices,
    )


def import_letta(
    db: Database,
    source_url: str,
    progress: Progress | None = None,
    *,
    stop: Callable[[], bool] | None = None,
    settings: Settings | None = None,
    vault: ProviderVault | None = None,
    letta_key: str | None = None,
    sealer: Sealer | None = None,
) -> Report:
    """Letta's import with the parts the settings choose (`operator_parts`); `letta_key` is
    the Letta server's LETTA_ENCRYPTION_KEY, if it had one."""
    parts = operator_parts(settings, vault=vault, sealer=sealer, progress=progress)
    return run_import(db, source_url, parts, letta_key, stop)
