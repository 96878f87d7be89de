"""Organizations' own model providers."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from cairn.domain.providers import ProviderType
from cairn.services.requests.base import StrictBody

# An endpoint a provider SDK can call: http(s), printable ASCII, no spaces.
BaseUrl = Annotated[str, Field(max_length=2048, pattern=r"^https?://[!-~]+$")]


class _ProviderKey(StrictBody):
    api_key: str = Field(min_length=1, max_length=4096)
    access_key: str | None = None
    region: str | None = None
    base_url: BaseUrl | None = None
    api_version: str | None = None


class ProviderCreate(_ProviderKey):
    name: str = Field(min_length=1, max_length=200, pattern=r"^[^/\s]+$")
    provider_type: ProviderType


class ProviderUpdate(_ProviderKey):
    pass


class ProviderCheck(_ProviderKey):
    model_config = ConfigDict(extra="ignore", protected_namespaces=(), defer_build=True)
    provider_type: ProviderType
