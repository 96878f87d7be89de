"""Letta's id format: `<prefix>-<uuid4>` in lowercase hex."""

from __future__ import annotations

import re
import uuid
from typing import Annotated

from pydantic import StringConstraints

PREFIXES = (
    "org", "user", "apikey", "agent", "block", "tool", "message", "archive",
    "passage", "run", "step", "group",
)  # fmt: skip

_UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def id_pattern(prefix: str) -> str:
    return rf"^{prefix}-{_UUID4}$"


def new_id(prefix: str) -> str:
    if prefix not in PREFIXES:
        raise ValueError(f"unknown id prefix {prefix!r}")
    return f"{prefix}-{uuid.uuid4()}"


def is_id(value: str, prefix: str) -> bool:
    return re.fullmatch(id_pattern(prefix), value) is not None


def IdOf(prefix: str) -> type[str]:  # noqa: N802 - reads as a type in annotations
    """A string type that only accepts ids with this prefix."""
    return Annotated[str, StringConstraints(pattern=id_pattern(prefix))]  # type: ignore[return-value]


OrgId = IdOf("org")
UserId = IdOf("user")
AgentId = IdOf("agent")
BlockId = IdOf("block")
ToolId = IdOf("tool")
MessageId = IdOf("message")
ArchiveId = IdOf("archive")
PassageId = IdOf("passage")
RunId = IdOf("run")
StepId = IdOf("step")
GroupId = IdOf("group")
