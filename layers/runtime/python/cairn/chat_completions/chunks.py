"""A turn's events as OpenAI's ChatCompletionChunk stream (Letta's
OpenAIChatCompletionsStreamTransformer): only what the agent says, the first chunk with
the assistant role, a last chunk with `finish_reason: stop`, then `[DONE]`; tool calls,
reasoning and the rest of the turn are left out."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from cairn.api import letta
from cairn.domain.runs import Usage
from cairn.services.streams import Ended, Event, Failed, Piece, Stored

DONE = b"data: [DONE]\n\n"


class ChatChunks:
    def __init__(self, completion_id: str, model: str, *, include_usage: bool = False) -> None:
        self.id, self.model, self.created = completion_id, model, int(time.time())
        self.include_usage = include_usage  # OpenAI's stream_options: a usage chunk last
        self.first = True
        self.pieced: set[str] = set()  # messages whose words went out as pieces

    def frames(self, events: Iterator[Event]) -> Iterator[bytes]:
        try:
            for event in events:
                yield from self._frames(event)
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()

    def _frames(self, event: Event) -> Iterator[bytes]:
        if isinstance(event, Piece) and event.delta.kind == "text" and event.delta.text:
            self.pieced.add(event.message_id)
            yield self._chunk({"content": event.delta.text})
        elif isinstance(event, Stored):
            for item in letta.expand(event.messages, use_assistant_message=True):
                if item["message_type"] == "assistant_message" and item["id"] not in self.pieced:
                    text = (
                        item["content"]
                        if isinstance(item["content"], str)
                        else "".join(part.get("text", "") for part in item["content"])
                    )
                    if text:
                        yield self._chunk({"content": text})
        elif isinstance(event, Failed):
            error = {"error": {"message": event.message, "type": "server_error"}}
            yield f"data: {json.dumps(error)}\n\n".encode()
            yield DONE
        elif isinstance(event, Ended):
            yield self._chunk({}, finish="stop")
            if self.include_usage:
                yield self._usage(event.usage or event.run.usage)
            yield DONE

    def _usage(self, usage: Usage) -> bytes:
        """OpenAI's last chunk under `include_usage`: no choices, the turn's token counts."""
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        return f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode()

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        if self.first and "content" in delta:
            delta = {"role": "assistant", **delta}
            self.first = False
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode()
