"""OpenAI's chat completion request, as Letta's /v1/chat/completions takes it."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from cairn.services.requests.base import RequestBody


class ChatCompletionRequest(RequestBody):
    """The fields Letta reads; the rest of OpenAI's (temperature, top_p, ...) are taken and
    unused, as in Letta: the agent's own model settings decide."""

    model: str = Field(min_length=1, description="The agent's id, `agent-<uuid4>`")
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool | None = False
    # OpenAI's `{"include_usage": true}`: a last chunk with no choices carries the usage.
    stream_options: dict[str, Any] | None = None
    user: str | None = None

    @property
    def include_usage(self) -> bool:
        return bool(self.stream and (self.stream_options or {}).get("include_usage"))
