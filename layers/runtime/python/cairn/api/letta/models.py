"""Models, embedding models and providers as Letta lists them."""

from __future__ import annotations

from typing import Any

from cairn.api.letta.agents import handle
from cairn.api.letta.times import iso
from cairn.domain.configs import EmbeddingConfig, LLMConfig
from cairn.domain.providers import Provider


def model_json(config: LLMConfig) -> dict[str, Any]:
    """Letta's Model: the LLMConfig and the provider it comes from (fixture models.json)."""
    kind = config.model_endpoint_type
    return config.model_dump(mode="json") | {
        "handle": config.handle or handle(kind, config.model),
        "name": config.model,
        "display_name": config.model,
        "provider_type": kind,
        "provider_name": config.provider_name or kind,
        "model_type": "llm",
        "provider_category": config.provider_category or "base",
        "max_context_window": config.context_window,
        "temperature": config.shown_temperature,
    }


def embedding_model_json(config: EmbeddingConfig) -> dict[str, Any]:
    kind = config.embedding_endpoint_type
    return config.model_dump(mode="json") | {
        "handle": config.handle or handle(kind, config.embedding_model),
        "name": config.embedding_model,
        "display_name": config.embedding_model,
        "provider_type": kind,
        "provider_name": kind,
        "model_type": "embedding",
        "provider_category": "base",
    }


def provider_json(provider: Provider) -> dict[str, Any]:
    """Letta's Provider; the key is never sent back, only its last four characters."""
    return {
        "id": provider.id,
        "name": provider.name,
        "provider_type": provider.provider_type,
        "provider_category": "byok",
        "api_key": f"...{provider.key_hint}" if provider.key_hint else "...",
        "base_url": provider.base_url,
        "access_key": None,
        "region": provider.region,
        "api_version": provider.api_version,
        "organization_id": provider.organization_id,
        "updated_at": iso(provider.updated_at),
    }
