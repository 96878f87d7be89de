"""Sandbox configs and their environment variables, as Letta's bodies give them."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from cairn.domain.agent_secrets import KEY_PATTERN
from cairn.services.requests.base import RequestBody


class SandboxConfigBody(RequestBody):
    config: dict[str, Any] = Field(default_factory=dict)


class SandboxEnvVarCreate(RequestBody):
    key: str = Field(pattern=KEY_PATTERN, max_length=200)
    value: str
    description: str | None = None


class SandboxEnvVarUpdate(RequestBody):
    key: str | None = Field(default=None, pattern=KEY_PATTERN, max_length=200)
    value: str | None = None
    description: str | None = None
