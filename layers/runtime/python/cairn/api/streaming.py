"""A stream's events in Letta's SSE wire format.

Each event is `data: <json>` and a blank line. The model's answer, when tokens are asked
for, comes as pieces sharing the id of the message they add up to, as Letta's chunks do
(an otid per run of one message type, derived from the id as Letta derives it); a step's
stored messages follow once it commits, less what its pieces already showed. Then the stop
reason, the usage and `[DONE]`; a failure is the stop reason, an `event: error` and
`[DONE]`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from cairn.api import letta
from cairn.domain.runs import TERMINAL_RUN_STATUSES, Run
from cairn.services.streams import Ended, Event, Failed, Piece, Ping, Stored

DONE = b"data: [DONE]\n\n"
_KINDS = {
    "text": "assistant_message",
    "reasoning": "reasoning_message",
    "tool_call": "tool_call_message",
    "approval": "approval_request_message",
}


def frame(event: dict[str, Any], name: str | None = None) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


def _failure(run: Run) -> Failed | None:
    """A run that failed in a step (the provider's error, a broken stream) ends its stream
    with Letta's error event."""
    if run.status != "failed":
        return None
    message = str((run.error or {}).get("message") or run.stop_reason or "the run failed")
    return Failed("llm_error" if run.stop_reason == "llm_api_error" else "internal_error", message)


def otid(message_id: str, index: int) -> str:
    """Letta's otid of the `index`th run of chunks of one message: the id's uuid with its
    last 7 bits set to the index (Message.generate_otid_from_id)."""
    value = (int(message_id.split("-", 1)[1].replace("-", ""), 16) & ~0x7F) | (index & 0x7F)
    return str(uuid.UUID(int=value))


class Letta:
    """Turns a run's events into Letta's SSE frames for one request's options."""

    def __init__(
        self,
        run_id: str,
        *,
        use_assistant_message: bool = True,
        only: list[str] | None = None,
        numbered: bool = False,
        starting_after: int = 0,
    ) -> None:
        self.run_id, self.use_assistant_message, self.only = run_id, use_assistant_message, only
        self.numbered, self.starting_after, self.seq = numbered, starting_after, 0
        self.pieced: set[tuple[str, str]] = set()  # (message id, type) shown as pieces
        self.named: set[str] = set()  # tool calls whose name went out with their first piece
        self.last_kind: dict[str, tuple[str, int]] = {}  # per message: last type, its index
        self.failed: Failed | None = None

    def frames(self, events: Iterator[Event]) -> Iterator[bytes]:
        try:
            for event in events:
                yield from self._frames(event)
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # the reader left: the steps after this one go to the queue

    def _frames(self, event: Event) -> Iterator[bytes]:
        if isinstance(event, Piece):
            chunk = self._piece(event)
            if chunk is not None and self._shown(chunk["message_type"]):
                yield frame(chunk)
        elif isinstance(event, Stored):
            shown = letta.expand(event.messages, use_assistant_message=self.use_assistant_message)
            for item in shown:
                if (item["id"], item["message_type"]) in self.pieced:
                    self.seq += 1  # counted as in a replay, where it comes whole
                    continue
                yield from self._numbered(item)
        elif isinstance(event, Ping):
            now = datetime.now(UTC).isoformat()
            yield frame(
                {
                    "id": f"ping-{uuid.uuid4()}",
                    "date": now,
                    "message_type": "ping",
                    "run_id": self.run_id,
                }
            )
        elif isinstance(event, Failed):
            self.failed = event
        elif isinstance(event, Ended):
            yield from self._end(event)

    def _end(self, ended: Ended) -> Iterator[bytes]:
        run = ended.run
        failed = self.failed or _failure(run)
        if failed is not None:
            reason = run.stop_reason if run.stop_reason not in (None, "end_turn") else "error"
            yield from self._numbered({"message_type": "stop_reason", "stop_reason": reason})
            error = {
                "message_type": "error_message",
                "run_id": self.run_id,
                "error_type": failed.kind,
                "message": failed.message,
                "detail": failed.message,
            }
            yield frame(error, "error")
            yield DONE
            return
        if run.status not in TERMINAL_RUN_STATUSES:
            return  # the run goes on: a background stream is resumed from its last seq_id
        yield from self._numbered({"message_type": "stop_reason", "stop_reason": run.stop_reason})
        yield from self._numbered(letta.usage_json(run, ended.usage))
        yield DONE

    def _numbered(self, item: dict[str, Any]) -> Iterator[bytes]:
        self.seq += 1
        if self.seq <= self.starting_after or not self._shown(item["message_type"]):
            return
        if self.numbered:
            item = {**item, "seq_id": self.seq, "run_id": item.get("run_id") or self.run_id}
        yield frame(item)

    def _shown(self, kind: str) -> bool:
        return self.only is None or kind in self.only or kind in ("stop_reason", "usage_statistics")

    def _piece(self, piece: Piece) -> dict[str, Any] | None:
        delta, message_id = piece.delta, piece.message_id
        kind = _KINDS[delta.kind]
        if delta.name == letta.ASSISTANT_TOOL and self.use_assistant_message:
            return None  # shown whole, as assistant text, when its step ends
        previous, index = self.last_kind.get(message_id, (kind, 0))
        index += previous != kind
        self.last_kind[message_id] = (kind, index)
        self.pieced.add((message_id, kind))
        chunk: dict[str, Any] = {
            "id": message_id,
            "date": datetime.now(UTC).isoformat(),
            "otid": otid(message_id, index),
            "run_id": self.run_id,
            "message_type": kind,
        }
        if delta.kind == "text":
            return chunk | {"content": delta.text}
        if delta.kind == "reasoning":
            return chunk | {"reasoning": delta.text, "source": "reasoner_model"}
        call = {
            "name": None if delta.call_id in self.named else delta.name,
            "arguments": delta.text,
            "tool_call_id": delta.call_id,
        }
        self.named.add(delta.call_id or "")
        return chunk | {"tool_call": call, "tool_calls": call}
