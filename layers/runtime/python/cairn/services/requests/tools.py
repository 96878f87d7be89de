"""Tools: made, changed, run, searched, switched to approval."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from cairn.domain.agent_secrets import KEY_PATTERN
from cairn.services.requests.base import RequestBody

ENV_NAME = re.compile(KEY_PATTERN)


class ToolCreate(RequestBody):
    source_code: str
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    source_type: str = "python"
    json_schema: dict[str, Any] | None = None
    args_json_schema: dict[str, Any] | None = None
    return_char_limit: int | None = Field(default=None, ge=1)
    pip_requirements: list[dict[str, Any]] | None = None
    default_requires_approval: bool = False
    enable_parallel_execution: bool = False


class ApprovalToggle(RequestBody):
    requires_approval: bool


class ToolUpdate(RequestBody):
    description: str | None = None
    tags: list[str] | None = None
    source_code: str | None = None
    json_schema: dict[str, Any] | None = None
    args_json_schema: dict[str, Any] | None = None
    return_char_limit: int | None = Field(default=None, ge=1)
    pip_requirements: list[dict[str, Any]] | None = None
    default_requires_approval: bool | None = None
    enable_parallel_execution: bool | None = None


class ToolRunFromSource(RequestBody):
    source_code: str
    args: dict[str, Any]
    name: str | None = None
    json_schema: dict[str, Any] | None = None
    # The run's environment, as Letta passes it to the sandbox (names as the shell takes them).
    env_vars: dict[str, str] | None = Field(default=None, max_length=100)

    @field_validator("env_vars")
    @classmethod
    def _names(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for name, text in (value or {}).items():
            if not ENV_NAME.fullmatch(name):
                raise ValueError(f"`{name[:60]}` is not an environment variable's name")
            if len(text) > 10_000:
                raise ValueError(f"the value of `{name}` is over 10,000 characters")
        return value


class ToolRun(RequestBody):
    args: dict[str, Any] = Field(default_factory=dict)


class ToolSearch(RequestBody):
    query: str | None = None
    search_mode: Literal["vector", "fts", "hybrid"] = "hybrid"
    tool_types: list[str] | None = None
    tags: list[str] | None = None
    limit: int = Field(default=50, ge=1, le=100)


class CodeInput(RequestBody):
    code: str = Field(max_length=100_000)
    source_type: str | None = None


class GenerateToolInput(RequestBody):
    """Letta's body of POST /v1/tools/generate-tool."""

    tool_name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    prompt: str = Field(min_length=1, max_length=20_000)
    handle: str | None = Field(default=None, max_length=300)
    starter_code: str | None = Field(default=None, max_length=100_000)
    validation_errors: list[Annotated[str, Field(max_length=4_000)]] = Field(max_length=50)
