"""Identities as Letta sends them."""

from __future__ import annotations

from typing import Any

from cairn.domain.identities import Identity


def identity_json(identity: Identity) -> dict[str, Any]:
    """Letta's Identity (its deprecated agent_ids and block_ids included, as it sends them)."""
    return {
        "id": identity.id,
        "identifier_key": identity.identifier_key,
        "name": identity.name,
        "identity_type": identity.identity_type,
        "project_id": identity.project_id,
        "agent_ids": identity.agent_ids,
        "block_ids": identity.block_ids,
        "organization_id": identity.organization_id,
        "properties": [p.model_dump(mode="json") for p in identity.properties],
    }
