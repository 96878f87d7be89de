"""Sandbox configs and their variables as Letta's SandboxConfig and SandboxEnvironmentVariable."""

from __future__ import annotations

from typing import Any

from cairn.api.letta.times import iso
from cairn.domain.sandbox_configs import SandboxConfig, SandboxEnvVar


def sandbox_config_json(config: SandboxConfig) -> dict[str, Any]:
    return {
        "id": config.id,
        "type": config.type,
        "config": config.config,
        "organization_id": config.organization_id,
        "created_by_id": None,
        "last_updated_by_id": None,
        "created_at": iso(config.created_at),
        "updated_at": iso(config.updated_at),
    }


def sandbox_env_var_json(var: SandboxEnvVar) -> dict[str, Any]:
    """Shown to its organization with its value, as Letta shows it (its `value_enc` is
    Letta's own ciphertext: Cairn's stays in the database)."""
    return {
        "id": var.id,
        "key": var.key,
        "value": var.value,
        "description": var.description,
        "organization_id": var.organization_id,
        "sandbox_config_id": var.sandbox_config_id,
        "value_enc": None,
        "created_by_id": None,
        "last_updated_by_id": None,
        "created_at": iso(var.created_at),
        "updated_at": iso(var.updated_at),
    }
