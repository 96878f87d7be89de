"""Typed path and query parameters shared by the routes: validated by Powertools, so a bad
value answers 422 naming the parameter, and each one appears in /openapi.json."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from cairn.domain.ids import id_pattern


def _id(prefix: str) -> object:
    return Path(pattern=id_pattern(prefix), description=f"The {prefix} id, `{prefix}-<uuid4>`")


AgentId = Annotated[str, _id("agent")]
BlockId = Annotated[str, _id("block")]
ToolId = Annotated[str, _id("tool")]
GroupId = Annotated[str, _id("group")]
PassageId = Annotated[str, _id("passage")]
RunId = Annotated[str, Path(description="The run id, `run-<uuid4>`")]  # checked for Letta's 400

After = Annotated[str | None, Query(description="Cursor: items after this id")]
Before = Annotated[str | None, Query(description="Cursor: items before this id")]
Order = Literal["asc", "desc"]
Limit = Annotated[int, Query(ge=1, le=1000)]
OptionalLimit = Annotated[int | None, Query(ge=1, le=1000)]
ArchiveId = Annotated[str, _id("archive")]
StepId = Annotated[str, _id("step")]
MessageId = Annotated[str, _id("message")]
ProviderId = Annotated[str, _id("provider")]
IdentityId = Annotated[str, _id("identity")]
SandboxConfigId = Annotated[str, _id("sandbox")]
FolderId = Annotated[str, _id("source")]
FileId = Annotated[str, _id("file")]
# A version of an agent in its history (docs/history.md).
Version = Annotated[int, Path(ge=1, le=2**62, description="A version of the agent")]
