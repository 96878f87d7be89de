"""Model providers an organization brings its own key for (Letta's BYOK providers)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.ids import OrgId, new_id

# Letta 0.16.1's ProviderType; Cairn can call the first four (the rest are stored and
# listed, and an agent naming one is refused when it is created).
CALLABLE = ("openai", "anthropic", "google_ai", "bedrock")
ProviderType = Literal[
    "anthropic",
    "azure",
    "bedrock",
    "cerebras",
    "deepseek",
    "google_ai",
    "google_vertex",
    "groq",
    "hugging-face",
    "letta",
    "lmstudio_openai",
    "mistral",
    "ollama",
    "openai",
    "together",
    "vllm",
    "xai",
]

# Handles are `<provider>/<model>`: a provider may not take a name the server's own use.
RESERVED = frozenset({"openai", "anthropic", "google_ai", "bedrock", "letta", "hash", "local"})


class Provider(DomainModel):
    id: str = Field(default_factory=lambda: new_id("provider"))
    organization_id: OrgId
    name: str = Field(min_length=1, max_length=200)
    provider_type: ProviderType
    base_url: str | None = None
    region: str | None = None
    api_version: str | None = None
    # Where the key is: a Secrets Manager secret's ARN (AWS), or sealed here with the local
    # envelope key. Never the key itself.
    key_ref: str | None = None
    key_sealed: bytes | None = None
    key_hint: str = ""  # the key's last four characters, to tell keys apart
    created_by_id: str | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)


def hint(key: str) -> str:
    return key[-4:] if len(key) >= 12 else ""
