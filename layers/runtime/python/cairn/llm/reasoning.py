"""Which models think, and how an agent's `reasoning` setting becomes its config, as Letta
0.16.1 decides it (`LLMConfig.apply_reasoning_setting_to_config`, applied when an agent is
created, and when it is updated with `reasoning`).

A `letta_v1_agent` never simulates reasoning in a tool's arguments: OpenAI's reasoning models
always reason; Anthropic's thinking models and Gemini 2.5 Flash follow the setting; Gemini 2.5
Pro and 3 always think; every other model does not. Other agent types with reasoning on put
their inner thoughts in the tool's arguments unless the model thinks natively.
"""

from __future__ import annotations

from typing import Any

from cairn.domain.configs import LLMConfig

ANTHROPIC_THINKING = ("claude-opus-4", "claude-sonnet-4", "claude-3-7-sonnet", "claude-haiku-4-5")
OPENAI_REASONING = ("o1", "o3", "o4", "gpt-5")
GEMINI_THINKING = ("gemini-2.5-flash", "gemini-2.5-pro")
ALWAYS_THINKING = ("gemini-2.5-pro", "gemini-3")
MIN_BUDGET = 1024


def anthropic_thinks(config: LLMConfig) -> bool:
    return config.model_endpoint_type == "anthropic" and config.model.startswith(ANTHROPIC_THINKING)


def openai_reasons(config: LLMConfig) -> bool:
    return config.model_endpoint_type == "openai" and config.model.startswith(OPENAI_REASONING)


def gemini_thinks(config: LLMConfig) -> bool:
    kinds = ("google_ai", "google_vertex")
    return config.model_endpoint_type in kinds and config.model.startswith(GEMINI_THINKING)


def default_reasoning(config: LLMConfig) -> bool:
    """What `reasoning` is when an agent is created without one: what its config says."""
    return config.enable_reasoner or config.put_inner_thoughts_in_kwargs


def apply(config: LLMConfig, reasoning: bool, agent_type: str | None) -> LLMConfig:
    """The config with Letta's reasoning flags for this setting, model and agent type."""
    update: dict[str, Any] = {}
    if agent_type == "letta_v1_agent":
        _v1(config, reasoning, update)
    elif not reasoning:
        _off(config, update)
    else:
        _on(config, update)
    return config.model_copy(update=update)


def _openai_effort(config: LLMConfig, update: dict[str, Any], *, none_first: bool) -> None:
    model = config.model
    if config.reasoning_effort is None:
        if none_first and model.startswith(("gpt-5.1", "gpt-5.2")):
            update["reasoning_effort"] = "none"
        elif model.startswith("gpt-5") and "codex" not in model.lower():
            update["reasoning_effort"] = "minimal"
        else:
            update["reasoning_effort"] = "medium"
    if model.startswith("gpt-5") and (config.model_extra or {}).get("verbosity") is None:
        update["verbosity"] = "medium"


def _opus_effort(config: LLMConfig, update: dict[str, Any]) -> None:
    extra = config.model_extra or {}
    if config.model.startswith("claude-opus-4-5") and extra.get("effort") is None:
        update["effort"] = "medium"


def _v1(config: LLMConfig, reasoning: bool, update: dict[str, Any]) -> None:
    update["put_inner_thoughts_in_kwargs"] = False
    if openai_reasons(config):
        update["enable_reasoner"] = True
        _openai_effort(config, update, none_first=True)
    elif anthropic_thinks(config) or (
        gemini_thinks(config) and not config.model.startswith(ALWAYS_THINKING)
    ):
        update["enable_reasoner"] = bool(reasoning)
        if reasoning and config.max_reasoning_tokens == 0:
            update["max_reasoning_tokens"] = MIN_BUDGET
        _opus_effort(config, update)
    elif config.model.startswith(ALWAYS_THINKING):
        update["enable_reasoner"] = True
        if config.max_reasoning_tokens == 0:
            update["max_reasoning_tokens"] = MIN_BUDGET
    else:
        update.update(enable_reasoner=False, max_reasoning_tokens=0)


def _off(config: LLMConfig, update: dict[str, Any]) -> None:
    if openai_reasons(config):
        update.update(put_inner_thoughts_in_kwargs=False, enable_reasoner=True)
        if config.model.startswith(("gpt-5.1", "gpt-5.2")):
            update["reasoning_effort"] = "none"  # GPT-5.1 can stop reasoning, the others not
            config = config.model_copy(update={"reasoning_effort": "none"})
        _openai_effort(config, update, none_first=False)
    elif config.model.startswith(ALWAYS_THINKING):
        update.update(put_inner_thoughts_in_kwargs=True, enable_reasoner=True)
        if config.max_reasoning_tokens == 0:
            update["max_reasoning_tokens"] = MIN_BUDGET
    else:
        update.update(put_inner_thoughts_in_kwargs=False, enable_reasoner=False)


def _on(config: LLMConfig, update: dict[str, Any]) -> None:
    update["enable_reasoner"] = True
    if anthropic_thinks(config):
        update["put_inner_thoughts_in_kwargs"] = False
        if config.max_reasoning_tokens == 0:
            update["max_reasoning_tokens"] = MIN_BUDGET
        _opus_effort(config, update)
    elif gemini_thinks(config):
        update["put_inner_thoughts_in_kwargs"] = True
        if config.max_reasoning_tokens == 0:
            update["max_reasoning_tokens"] = MIN_BUDGET
    elif openai_reasons(config):
        update["put_inner_thoughts_in_kwargs"] = False
        _openai_effort(config, update, none_first=True)
    else:
        update["put_inner_thoughts_in_kwargs"] = True
