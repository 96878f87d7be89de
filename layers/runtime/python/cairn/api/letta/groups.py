"""Groups as Letta sends them."""

from __future__ import annotations

from typing import Any

from cairn.domain.groups import Group


def group_json(group: Group) -> dict[str, Any]:
    # Letta's Group admits no timestamps (additionalProperties false).
    return group.model_dump(mode="json", exclude={"organization_id", "created_at", "updated_at"})
