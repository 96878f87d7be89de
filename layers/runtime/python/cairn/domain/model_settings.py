"""An agent's `model_settings` as Letta shows them: a view of its llm_config by provider
type, and the llm_config a client's model settings make.

Letta 0.16.1 derives the view from llm_config (`LLMConfig._to_model_settings`) and applies
a request's settings back onto it (`_to_legacy_config_params`); so does Cairn, with two
differences, both where Letta loses what the agent has:
- `parallel_tool_calls` shows the agent's own (Letta always shows false);
- a Bedrock agent shows BedrockModelSettings (Letta fails to build its settings).
"""

from __future__ import annotations

from typing import Any

from cairn.domain.configs import LLMConfig

# The provider types Letta's schema has settings for (its `provider_type` discriminator).
_OPENAI_LIKE = ("azure", "xai", "groq", "deepseek", "together", "bedrock")
_GEMINI = ("google_ai", "google_vertex")


def of(llm: LLMConfig) -> dict[str, Any] | None:
    """The settings an AgentState shows for `llm`; None for a provider type Letta's schema
    has no settings for."""
    kind = llm.model_endpoint_type
    common = {
        "parallel_tool_calls": llm.parallel_tool_calls,
        "provider_type": kind,
        "temperature": llm.shown_temperature,
    }
    if kind == "openai":
        return {
            "max_output_tokens": llm.max_tokens or 4096,
            **common,
            "reasoning": {"reasoning_effort": llm.reasoning_effort or "minimal"},
            "response_format": None,
        }
    if kind == "anthropic":
        thinking = "enabled" if llm.enable_reasoner else "disabled"
        return {
            "max_output_tokens": llm.max_tokens or 4096,
            **common,
            "thinking": {"type": thinking, "budget_tokens": llm.max_reasoning_tokens or 1024},
            "response_format": None,
            "verbosity": None,
            "effort": None,
        }
    if kind in _GEMINI:
        budget = llm.max_reasoning_tokens
        return {
            "max_output_tokens": llm.max_tokens or 65536,
            **common,
            "thinking_config": {"include_thoughts": budget > 0, "thinking_budget": budget or 1024},
            "response_schema": None,
        }
    if kind in _OPENAI_LIKE:
        return {"max_output_tokens": llm.max_tokens or 4096, **common, "response_format": None}
    return None


# What Cairn does not send to a model yet: refused when set, not kept and ignored.
UNSUPPORTED = ("response_format", "response_schema", "verbosity", "effort")


def applied(llm: LLMConfig, given: dict[str, Any]) -> LLMConfig:
    """`llm` with the settings a client gave (only the fields it set). A field equal to what
    the agent already shows is no change: settings read from an agent and sent back leave
    it as it was (e.g. the `minimal` effort shown for a model that has none)."""
    shown = of(llm) or {}
    changed = {k: v for k, v in given.items() if v != shown.get(k) and k != "provider_type"}
    for field in UNSUPPORTED:
        if changed.get(field) is not None:
            raise ValueError(f"model_settings.{field}: Cairn does not support it yet")
    update: dict[str, Any] = {}
    if "max_output_tokens" in changed:
        update["max_tokens"] = changed["max_output_tokens"]
    for same in ("temperature", "parallel_tool_calls"):
        if same in changed:
            update[same] = changed[same]
    if "reasoning" in changed:
        update["reasoning_effort"] = changed["reasoning"]["reasoning_effort"]
    if "thinking" in changed:
        thinking = changed["thinking"]
        update["enable_reasoner"] = thinking["type"] == "enabled"
        update["max_reasoning_tokens"] = thinking["budget_tokens"]
    if "thinking_config" in changed:
        config = changed["thinking_config"]
        update["max_reasoning_tokens"] = (
            config["thinking_budget"] if config["include_thoughts"] else 0
        )
    return LLMConfig.model_validate(llm.model_dump() | update)
