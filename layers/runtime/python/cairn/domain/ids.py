"""Letta's id format: `<prefix>-<uuid4>` in lowercase hex."""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Annotated

from pydantic import StringConstraints

PREFIXES = (
    "org",
    "user",
    "apikey",
    "agent",
    "block",
    "tool",
    "message",
    "archive",
    "passage",
    "run",
    "step",
    "group",
    "job",
    "provider",
    "identity",
    "agent-env",
    "sandbox",
    "sandbox-env",
    "source",  # folders keep the id prefix of their older name
    "file",
    "schedule",
)
# Each edge's own prefixes, declared where its models are (`prefix`).
_declared: set[str] = set()


def prefix(name: str) -> str:
    """An edge's id prefix, declared so `new_id` takes it; the name back."""
    if not re.fullmatch(r"[a-z][a-z_-]*", name):
        raise ValueError(f"an id prefix is lowercase letters, '-' and '_': {name!r}")
    _declared.add(name)
    return name


_UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def id_pattern(prefix: str) -> str:
    return rf"^{prefix}-{_UUID4}$"


def new_id(prefix: str) -> str:
    if prefix not in PREFIXES and prefix not in _declared:
        raise ValueError(f"unknown id prefix {prefix!r}")
    return f"{prefix}-{uuid.uuid4()}"


def stable_id(prefix: str, *parts: str) -> str:
    """The same id for the same parts, in the uuid4 shape Letta's ids have: a retried
    action that creates something (a workflow task starting a run) creates it once."""
    digest = hashlib.sha256("\x1f".join((prefix, *parts)).encode()).digest()
    return f"{prefix}-{uuid.UUID(bytes=digest[:16], version=4)}"


def is_id(value: str, prefix: str) -> bool:
    return re.fullmatch(id_pattern(prefix), value) is not None


# String types that only accept ids with their prefix (spelled out so type checkers see aliases).
OrgId = Annotated[str, StringConstraints(pattern=id_pattern("org"))]
UserId = Annotated[str, StringConstraints(pattern=id_pattern("user"))]
AgentId = Annotated[str, StringConstraints(pattern=id_pattern("agent"))]
BlockId = Annotated[str, StringConstraints(pattern=id_pattern("block"))]
ToolId = Annotated[str, StringConstraints(pattern=id_pattern("tool"))]
MessageId = Annotated[str, StringConstraints(pattern=id_pattern("message"))]
ArchiveId = Annotated[str, StringConstraints(pattern=id_pattern("archive"))]
IdentityId = Annotated[str, StringConstraints(pattern=id_pattern("identity"))]
PassageId = Annotated[str, StringConstraints(pattern=id_pattern("passage"))]
RunId = Annotated[str, StringConstraints(pattern=id_pattern("run"))]
StepId = Annotated[str, StringConstraints(pattern=id_pattern("step"))]
GroupId = Annotated[str, StringConstraints(pattern=id_pattern("group"))]
