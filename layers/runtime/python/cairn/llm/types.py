"""One request and one response shape for every provider.

The response is what the step journals before any tool runs, so it is a plain pydantic
model that round-trips through JSON exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from pydantic import Field

from cairn.domain.base import Value
from cairn.domain.configs import LLMConfig
from cairn.domain.messages import Message, ReasoningContent, ToolCall

ToolChoice = Literal["auto", "required", "none"] | str  # or the name of one tool
FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "other"]


class LLMRequest(Value):
    config: LLMConfig
    messages: list[Message]  # [0] is the system message
    tools: list[dict[str, Any]] = Field(default_factory=list)  # {"name","description","parameters"}
    tool_choice: ToolChoice = "auto"
    # Who the call is for, as OpenAI's `user` field takes it (Letta sends its actor's id;
    # Cairn, the agent's organization's).
    user: str | None = None


class LLMUsage(Value):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def step_fields(self) -> dict[str, int]:
        """What a step keeps of it (steps' columns of the same names)."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }

    @classmethod
    def with_cache(cls, uncached: int, output: int, cache_read: int, cache_write: int) -> LLMUsage:
        """Usage of a provider that counts cache reads and writes apart from the other input
        tokens (Anthropic, Bedrock): the prompt is all three."""
        prompt = uncached + cache_read + cache_write
        return cls(
            prompt_tokens=prompt,
            completion_tokens=output,
            total_tokens=prompt + output,
            cached_input_tokens=cache_read,
            cache_write_tokens=cache_write,
        )


class LLMResponse(Value):
    text: str = ""
    reasoning: list[ReasoningContent] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: LLMUsage = Field(default_factory=LLMUsage)
    finish_reason: FinishReason = "stop"
    model: str | None = None


class Delta(NamedTuple):
    """A piece of a response as the provider streams it: text, reasoning, or the arguments
    of a tool call (`call_id` and `name` on every piece of one call; kind `approval` when
    the step will wait for a person's approval of that call)."""

    kind: Literal["text", "reasoning", "tool_call", "approval"]
    text: str
    call_id: str | None = None
    name: str | None = None


# Called with each piece while the model answers; the assembled LLMResponse still comes back.
OnDelta = Callable[[Delta], None]
# A piece of the model's answer, with the id of the message it will be stored in.
MessageDelta = Callable[[str, Delta], None]


ErrorKind = Literal["auth", "rate_limit", "bad_request", "server", "timeout", "connection"]


class LLMError(Exception):
    """A provider call that failed after the SDK's own retries.

    `transient` errors (rate limits, 5xx, timeouts, lost connections) are worth another
    delivery later; the others (auth, bad request) fail the run with `llm_api_error`.
    """

    def __init__(self, kind: ErrorKind, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status

    @property
    def transient(self) -> bool:
        return self.kind in ("rate_limit", "server", "timeout", "connection")
