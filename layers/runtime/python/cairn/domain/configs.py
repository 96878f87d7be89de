"""Per-agent configuration documents, stored as jsonb."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cairn.domain.constants import DEFAULT_CONTEXT_WINDOW, MAX_EMBEDDING_DIM, MIN_CONTEXT_WINDOW

LETTA_TEMPERATURE = 0.7
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class _Config(BaseModel):
    # Letta clients send fields we do not use yet; keep them so a round trip loses nothing.
    model_config = ConfigDict(extra="allow", protected_namespaces=(), defer_build=True)


class LLMConfig(_Config):
    model: str = Field(min_length=1)
    model_endpoint_type: str = "openai"
    model_endpoint: str | None = None
    provider_name: str | None = None
    # "byok": the organization's own provider (its key from the providers API), else "base".
    provider_category: str | None = None
    handle: str | None = None
    context_window: int = Field(default=DEFAULT_CONTEXT_WINDOW, ge=MIN_CONTEXT_WINDOW)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    put_inner_thoughts_in_kwargs: bool = False
    # Letta's default: a model that can think does (Anthropic's, Gemini's thinking models).
    enable_reasoner: bool = True
    reasoning_effort: ReasoningEffort | None = None
    max_reasoning_tokens: int = Field(default=0, ge=0)
    parallel_tool_calls: bool = False

    @property
    def shown_temperature(self) -> float:
        """The temperature as Letta shows it: its LLMConfig has no null one (0.7 stands
        for the provider's own)."""
        return LETTA_TEMPERATURE if self.temperature is None else self.temperature


class EmbeddingConfig(_Config):
    embedding_model: str = Field(min_length=1)
    embedding_endpoint_type: str = "openai"
    embedding_endpoint: str | None = None
    embedding_dim: int = Field(ge=1, le=MAX_EMBEDDING_DIM)
    embedding_chunk_size: int = Field(default=300, ge=1)
    handle: str | None = None
    batch_size: int = Field(default=32, ge=1)


class CompactionSettings(_Config):
    model: str | None = None
    prompt: str | None = None
    clip_chars: int = Field(default=2000, ge=0)
    mode: Literal["sliding_window", "all"] = "sliding_window"
    sliding_window_percentage: float = Field(default=0.5, gt=0, lt=1)
