"""Sandbox configs: Letta's per-organization settings for each kind of tool sandbox, and the
environment variables the tools get. Cairn runs every tool in its own sandbox, which takes
the `local` config's variables (beneath the agent's secrets); the other kinds' settings are
kept and shown, for clients that manage them, and used by nothing."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from cairn.domain.sandbox_configs import (
    SandboxConfig,
    SandboxEnvVar,
    SandboxType,
    kind_of,
    settings,
)
from cairn.errors import InvalidArgumentError, UnprocessableError, found, not_found
from cairn.run.runtime import Runtime
from cairn.services.requests import SandboxConfigBody, SandboxEnvVarCreate, SandboxEnvVarUpdate
from cairn.store import sandbox_configs as store


def _settings(kind: SandboxType, given: dict[str, Any]) -> dict[str, Any]:
    try:
        return settings(kind, given)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UnprocessableError(f"config.{where}: {first['msg']} (a {kind} sandbox's)") from None


def create_or_update(
    rt: Runtime, org: str, req: SandboxConfigBody, *, kind: SandboxType | None = None
) -> SandboxConfig:
    """Letta: one config of each kind per organization; creating another replaces its
    settings."""
    kind = kind or kind_of(req.config)
    config = SandboxConfig(organization_id=org, type=kind, config=_settings(kind, req.config))
    with rt.db.transaction() as conn:
        return store.upsert(conn, config)


def default(rt: Runtime, org: str, kind: SandboxType) -> SandboxConfig:
    """The organization's config of that kind, made with the defaults if it has none."""
    config = SandboxConfig(organization_id=org, type=kind, config=settings(kind, {}))
    with rt.db.transaction() as conn:
        return store.get_or_make(conn, config)


def update(rt: Runtime, org: str, config_id: str, req: SandboxConfigBody) -> SandboxConfig:
    """New settings over the config's; one of another kind's is a 422 naming it."""
    with rt.db.transaction() as conn:
        found = _config(conn, org, config_id)
        merged = _settings(found.type, {**found.config, **req.config})
        changed = store.update(conn, org, config_id, merged)
        assert changed is not None
        return changed


def delete(rt: Runtime, org: str, config_id: str) -> None:
    with rt.db.transaction() as conn:
        if not store.delete(conn, org, config_id):
            raise not_found("Sandbox config", config_id)


def list_configs(
    rt: Runtime, org: str, *, kind: SandboxType | None, after: str | None, limit: int
) -> list[SandboxConfig]:
    with rt.db.connection() as conn:
        return store.list_configs(conn, org, kind=kind, after=after, limit=limit)


def _config(conn: Any, org: str, config_id: str) -> SandboxConfig:
    return found(store.get(conn, org, config_id), "Sandbox config", config_id)


# -- environment variables ----------------------------------------------------------------


def put_var(rt: Runtime, org: str, config_id: str, req: SandboxEnvVarCreate) -> SandboxEnvVar:
    """Letta: a variable of a name the config has already is replaced."""
    with rt.db.transaction() as conn:
        _config(conn, org, config_id)
        var = SandboxEnvVar(
            organization_id=org,
            sandbox_config_id=config_id,
            key=req.key,
            value=req.value,
            description=req.description,
        )
        return store.put_var(conn, rt.engine.sealer, var)


def vars_of(
    rt: Runtime, org: str, config_id: str, *, after: str | None, limit: int
) -> list[SandboxEnvVar]:
    with rt.db.connection() as conn:
        _config(conn, org, config_id)
        return store.vars_of(conn, rt.engine.sealer, org, config_id, after=after, limit=limit)


def update_var(rt: Runtime, org: str, var_id: str, req: SandboxEnvVarUpdate) -> SandboxEnvVar:
    with rt.db.transaction() as conn:
        current = found(
            store.get_var(conn, rt.engine.sealer, org, var_id), "Environment variable", var_id
        )
        changes = req.model_dump(exclude_none=True)
        if not changes:
            return current
        changed = current.model_copy(update=changes)
        if changed.key != current.key and store.named(
            conn, org, current.sandbox_config_id, changed.key
        ):
            raise InvalidArgumentError(f"key: the config has a variable `{changed.key}` already")
        kept = store.replace_var(conn, rt.engine.sealer, changed)
        assert kept is not None
        return kept


def delete_var(rt: Runtime, org: str, var_id: str) -> None:
    with rt.db.transaction() as conn:
        if not store.delete_var(conn, org, var_id):
            raise not_found("Environment variable", var_id)
