"""Sandbox configs (one per kind and organization) and their sealed environment variables."""

from __future__ import annotations

from psycopg.types.json import Jsonb

from cairn.domain.sandbox_configs import SandboxConfig, SandboxEnvVar
from cairn.sealing import Sealer
from cairn.store.db import Connection

UPSERT_CONFIG = """
INSERT INTO sandbox_configs (id, organization_id, type, config)
VALUES (%(id)s, %(organization_id)s, %(type)s, %(config)s)
ON CONFLICT (organization_id, type) DO UPDATE SET config = EXCLUDED.config, updated_at = now()
RETURNING *
"""
GET_OR_MAKE_CONFIG = """
WITH made AS (
    INSERT INTO sandbox_configs (id, organization_id, type, config)
    VALUES (%(id)s, %(organization_id)s, %(type)s, %(config)s)
    ON CONFLICT (organization_id, type) DO NOTHING RETURNING *
)
SELECT * FROM made
UNION ALL SELECT * FROM sandbox_configs WHERE organization_id = %(organization_id)s
    AND type = %(type)s AND NOT EXISTS (SELECT 1 FROM made)
"""
UPDATE_CONFIG = """
UPDATE sandbox_configs SET config = %s, updated_at = now()
WHERE organization_id = %s AND id = %s RETURNING *
"""
LIST_CONFIGS = """
SELECT * FROM sandbox_configs
WHERE organization_id = %s AND (%s::text IS NULL OR type = %s) AND (%s::text IS NULL OR id > %s)
ORDER BY id LIMIT %s
"""


def upsert(conn: Connection, config: SandboxConfig) -> SandboxConfig:
    """The organization's config of that kind, made or its settings replaced (Letta)."""
    row = conn.execute(UPSERT_CONFIG, _params(config)).fetchone()
    return SandboxConfig.model_validate(row)


def get_or_make(conn: Connection, config: SandboxConfig) -> SandboxConfig:
    """The organization's config of that kind, or `config` made it."""
    row = conn.execute(GET_OR_MAKE_CONFIG, _params(config)).fetchone()
    return SandboxConfig.model_validate(row)


def _params(config: SandboxConfig) -> dict[str, object]:
    return {
        "id": config.id,
        "organization_id": config.organization_id,
        "type": config.type,
        "config": Jsonb(config.config),
    }


def get(conn: Connection, org_id: str, config_id: str) -> SandboxConfig | None:
    row = conn.execute(
        "SELECT * FROM sandbox_configs WHERE organization_id = %s AND id = %s", (org_id, config_id)
    ).fetchone()
    return None if row is None else SandboxConfig.model_validate(row)


def update(
    conn: Connection, org_id: str, config_id: str, settings: dict[str, object]
) -> SandboxConfig | None:
    row = conn.execute(UPDATE_CONFIG, (Jsonb(settings), org_id, config_id)).fetchone()
    return None if row is None else SandboxConfig.model_validate(row)


def delete(conn: Connection, org_id: str, config_id: str) -> bool:
    deleted = conn.execute(
        "DELETE FROM sandbox_configs WHERE organization_id = %s AND id = %s", (org_id, config_id)
    )
    return deleted.rowcount == 1


def list_configs(
    conn: Connection, org_id: str, *, kind: str | None, after: str | None, limit: int
) -> list[SandboxConfig]:
    rows = conn.execute(LIST_CONFIGS, (org_id, kind, kind, after, after, limit)).fetchall()
    return [SandboxConfig.model_validate(r) for r in rows]


def bound(org_id: str, config_id: str, key: str) -> str:
    return f"sandbox-env:{org_id}:{config_id}:{key}"


def put_var(conn: Connection, sealer: Sealer, var: SandboxEnvVar) -> SandboxEnvVar:
    """The variable, made or (same config, same name) its value and description replaced."""
    sealed = sealer.seal(var.value, bound(var.organization_id, var.sandbox_config_id, var.key))
    row = conn.execute(
        """INSERT INTO sandbox_env_vars (id, organization_id, sandbox_config_id, key,
                value_sealed, description)
            VALUES (%s, %s, %s, %s, %s, %s)
            ON CONFLICT (sandbox_config_id, key) DO UPDATE SET
                value_sealed = EXCLUDED.value_sealed,
                description = coalesce(EXCLUDED.description, sandbox_env_vars.description),
                updated_at = now()
            RETURNING *""",
        (var.id, var.organization_id, var.sandbox_config_id, var.key, sealed, var.description),
    ).fetchone()
    assert row is not None  # an upsert returns its row
    return _opened(sealer, row)


def vars_of(
    conn: Connection,
    sealer: Sealer,
    org_id: str,
    config_id: str,
    *,
    after: str | None = None,
    limit: int = 1000,
) -> list[SandboxEnvVar]:
    rows = conn.execute(
        """SELECT * FROM sandbox_env_vars
            WHERE organization_id = %s AND sandbox_config_id = %s
              AND (%s::text IS NULL OR id > %s) ORDER BY id LIMIT %s""",
        (org_id, config_id, after, after, limit),
    ).fetchall()
    return [_opened(sealer, r) for r in rows]


def get_var(conn: Connection, sealer: Sealer, org_id: str, var_id: str) -> SandboxEnvVar | None:
    row = conn.execute(
        "SELECT * FROM sandbox_env_vars WHERE organization_id = %s AND id = %s",
        (org_id, var_id),
    ).fetchone()
    return None if row is None else _opened(sealer, row)


def named(conn: Connection, org_id: str, config_id: str, key: str) -> bool:
    """Whether the config has a variable of that name."""
    return (
        conn.execute(
            "SELECT 1 FROM sandbox_env_vars WHERE organization_id = %s AND sandbox_config_id = %s"
            " AND key = %s",
            (org_id, config_id, key),
        ).fetchone()
        is not None
    )


def delete_var(conn: Connection, org_id: str, var_id: str) -> bool:
    deleted = conn.execute(
        "DELETE FROM sandbox_env_vars WHERE organization_id = %s AND id = %s", (org_id, var_id)
    )
    return deleted.rowcount == 1


def replace_var(conn: Connection, sealer: Sealer, var: SandboxEnvVar) -> SandboxEnvVar | None:
    """A variable changed in place (its name too); None if it is gone."""
    sealed = sealer.seal(var.value, bound(var.organization_id, var.sandbox_config_id, var.key))
    row = conn.execute(
        """UPDATE sandbox_env_vars SET key = %s, value_sealed = %s, description = %s,
                updated_at = now()
            WHERE organization_id = %s AND id = %s RETURNING *""",
        (var.key, sealed, var.description, var.organization_id, var.id),
    ).fetchone()
    return None if row is None else _opened(sealer, row)


def local_environment(conn: Connection, sealer: Sealer, org_id: str) -> dict[str, str]:
    """The variables of the organization's `local` config: what its tools get here."""
    rows = conn.execute(
        """SELECT v.* FROM sandbox_env_vars v
            JOIN sandbox_configs c ON c.id = v.sandbox_config_id
            WHERE v.organization_id = %s AND c.organization_id = %s AND c.type = 'local'""",
        (org_id, org_id),
    ).fetchall()
    return {var.key: var.value for var in (_opened(sealer, r) for r in rows)}


def _opened(sealer: Sealer, row: dict[str, object]) -> SandboxEnvVar:
    row = dict(row)
    sealed = bytes(row.pop("value_sealed"))  # type: ignore[call-overload]
    where = bound(str(row["organization_id"]), str(row["sandbox_config_id"]), str(row["key"]))
    return SandboxEnvVar.model_validate({**row, "value": sealer.open(sealed, where)})
