"""Letta's sandbox configs: an organization's settings for one kind of tool sandbox, and the
environment variables that kind's tools get."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cairn.domain.agent_secrets import KEY_PATTERN
from cairn.domain.base import DomainModel, utc_now
from cairn.domain.ids import new_id

SandboxType = Literal["local", "e2b", "modal"]


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LocalSettings(_Settings):
    """Letta 0.16.1's LocalSandboxConfig."""

    sandbox_dir: str | None = None
    use_venv: bool = False
    venv_name: str = "venv"
    pip_requirements: list[dict[str, Any]] = Field(default_factory=list)


class E2BSettings(_Settings):
    timeout: int = 300
    template: str | None = None
    pip_requirements: list[str] | None = None


class ModalSettings(_Settings):
    timeout: int = 60
    pip_requirements: list[str] | None = None
    npm_requirements: list[str] | None = None
    language: Literal["python", "typescript"] = "python"


SETTINGS: dict[str, type[_Settings]] = {
    "local": LocalSettings,
    "e2b": E2BSettings,
    "modal": ModalSettings,
}


def settings(kind: SandboxType, given: dict[str, Any]) -> dict[str, Any]:
    """A kind's settings, checked (ValueError names what is wrong), with its defaults."""
    given = {k: v for k, v in given.items() if k != "type"}
    return SETTINGS[kind].model_validate(given).model_dump(exclude_none=True)


def kind_of(config: dict[str, Any]) -> SandboxType:
    """Which kind a config is, from the settings it names (as Letta's union tells them
    apart): modal's own, e2b's own, else local (an empty one too)."""
    keys = set(config)
    if keys & {"language", "npm_requirements"}:
        return "modal"
    if keys & {"template", "timeout"}:
        return "e2b"
    return "local"


class SandboxConfig(DomainModel):
    id: str = Field(default_factory=lambda: new_id("sandbox"))
    organization_id: str
    type: SandboxType
    config: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)


class SandboxEnvVar(DomainModel):
    id: str = Field(default_factory=lambda: new_id("sandbox-env"))
    organization_id: str
    sandbox_config_id: str
    key: str = Field(pattern=KEY_PATTERN, max_length=200)
    value: str = Field(repr=False)  # opened; sealed at rest
    description: str | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
