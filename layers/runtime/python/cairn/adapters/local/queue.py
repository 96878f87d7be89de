"""The queues of `make dev`, in this process: what SQS does for the deployed stack, with the
consumer woken by the publish itself instead of by a long poll.

moto's SQS server (kept for the tests of SQS itself, `adapters/local/sqs.py`) cost the
local stack most of its CPU (four pollers, idle or not) and a queued turn its start: its FIFO sees a
message group free only when the next 1 s long poll begins. Here a consumer waits on a
condition, so a step published as the previous one of its agent commits starts at once.

Kept from SQS FIFO, since the handlers and the watchdog rely on them: message groups (one
message of a group in flight or waiting out a retry, the next held behind it), deduplication
ids within five minutes, receive counts, a failed message back after its visibility delay,
and the dead-letter queue after `max_receives`. Consumers get SQS-shaped events and answer
with partial batch failures, as from Lambda's event source mapping. A crash loses what was
queued, as a crash of moto's server did: `watchdog.recover_after_restart` sends it again.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from cairn.adapters.aws.sqs import RETRY_BASE_SECONDS, RETRY_MAX_SECONDS, message_fields
from cairn.adapters.local.lambdas import invoke
from cairn.domain.runs import OutboxCommand

logger = logging.getLogger(__name__)
DEDUP_SECONDS = 300.0  # SQS FIFO's deduplication interval
REGION, ACCOUNT = "us-east-1", "000000000000"


@dataclass
class Message:
    body: str
    group: str
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    sent_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    receives: int = 0
    visible_at: float = 0.0  # monotonic
    handle: str | None = None  # set while received
    sequence: int = 0


class LocalQueue:
    """One SQS FIFO queue (message groups, deduplication), with an optional dead-letter
    queue taking a message after `max_receives` failed receives."""

    _sequence = itertools.count(1)

    def __init__(
        self, name: str, *, max_receives: int = 3, dead_letters: LocalQueue | None = None
    ) -> None:
        self.name, self.max_receives = name, max_receives
        self.dead_letters = dead_letters
        self.arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
        self._ready: list[Message] = []  # in send order
        self._received: dict[str, Message] = {}  # by receipt handle
        self._busy_groups: set[str] = set()
        self._seen: OrderedDict[str, float] = OrderedDict()  # deduplication id -> sent at
        self._changed = threading.Condition()
        self._closed = False

    def send(self, body: str, *, group: str, dedup: str | None = None) -> bool:
        """Queue a message; False when it is dropped as a duplicate."""
        now = time.monotonic()
        with self._changed:
            if dedup is not None:
                while self._seen and next(iter(self._seen.values())) < now - DEDUP_SECONDS:
                    self._seen.popitem(last=False)
                if dedup in self._seen:
                    return False
                self._seen[dedup] = now
            self._ready.append(Message(body, group, sequence=next(self._sequence)))
            self._changed.notify_all()
        return True

    def receive(self, stop: threading.Event) -> Message | None:
        """The first deliverable message, waiting for one; None once `stop` is set."""
        with self._changed:
            while not (stop.is_set() or self._closed):
                now = time.monotonic()
                found, wake_at = self._first_deliverable(now)
                if found is not None:
                    self._ready.remove(found)
                    found.receives += 1
                    found.handle = str(uuid.uuid4())
                    self._received[found.handle] = found
                    self._busy_groups.add(found.group)
                    return found
                self._changed.wait(None if wake_at is None else max(wake_at - now, 0.001))
        return None

    def _first_deliverable(self, now: float) -> tuple[Message | None, float | None]:
        held: set[str] = set(self._busy_groups)
        wake_at: float | None = None
        for m in self._ready:
            if m.group in held:
                continue
            if m.visible_at > now:
                wake_at = m.visible_at if wake_at is None else min(wake_at, m.visible_at)
                held.add(m.group)  # a group waits behind its first message
                continue
            return m, None
        return None, wake_at

    def delete(self, handle: str) -> None:
        with self._changed:
            m = self._received.pop(handle, None)
            if m is not None:
                self._busy_groups.discard(m.group)
            self._changed.notify_all()

    def release(self, handle: str, delay_seconds: float) -> None:
        """A failed receive: the message comes back after `delay_seconds` (its visibility),
        or goes to the dead-letter queue once received `max_receives` times."""
        with self._changed:
            m = self._received.pop(handle, None)
            if m is None:
                return
            self._busy_groups.discard(m.group)
            if m.receives >= self.max_receives and self.dead_letters is not None:
                self.dead_letters.send(m.body, group=m.group)
            else:
                m.handle, m.visible_at = None, time.monotonic() + delay_seconds
                self._ready.append(m)
                self._ready.sort(key=lambda x: x.sequence)  # a group keeps its order
            self._changed.notify_all()

    def depth(self) -> int:
        with self._changed:
            return len(self._ready) + len(self._received)

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def record(self, m: Message) -> dict[str, Any]:
        """The message as one record of Lambda's SQS event."""
        assert m.handle is not None
        attributes = {
            "ApproximateReceiveCount": str(m.receives),
            "SentTimestamp": str(m.sent_ms),
            "SenderId": "local",
            "ApproximateFirstReceiveTimestamp": str(m.sent_ms),
            "MessageGroupId": m.group,
            "MessageDeduplicationId": m.id,
            "SequenceNumber": str(m.sequence),
        }
        return {
            "messageId": m.id,
            "receiptHandle": m.handle,
            "body": m.body,
            "attributes": attributes,
            "messageAttributes": {},
            "md5OfBody": "",
            "eventSource": "aws:sqs",
            "eventSourceARN": self.arn,
            "awsRegion": REGION,
        }


class LocalStepQueue:
    """The `StepQueue` port over a `LocalQueue` (the step queue or the embedding queue),
    with the same messages as `SqsStepQueue`: a group per agent, deduplication ids."""

    def __init__(self, queue: LocalQueue, *, retry_seconds: float) -> None:
        self.queue, self.retry_seconds = queue, retry_seconds

    def publish(self, command: OutboxCommand) -> None:
        fields = message_fields(command)
        self.queue.send(
            fields["MessageBody"],
            group=fields["MessageGroupId"],
            dedup=fields["MessageDeduplicationId"],
        )

    def publish_many(self, commands: list[OutboxCommand]) -> list[OutboxCommand]:
        for command in commands:
            self.publish(command)
        return []

    def retry_after(self, receipt_handle: str, receives: int) -> float:
        """What `SqsStepQueue.retry_after` answers; the local consumer brings the message
        back after the local stack's shorter `retry_seconds` instead."""
        return float(min(RETRY_BASE_SECONDS * 2 ** max(receives - 1, 0), RETRY_MAX_SECONDS))


class Consumer(threading.Thread):
    """Lambda's event source mapping for one queue and one execution environment: take a
    message, hand it to the function as a batch of one, delete it or let it come back."""

    def __init__(
        self,
        queue: LocalQueue,
        function: str,
        *,
        attribute: str = "handler",
        environment: int = 0,
        retry_seconds: float = 2.0,
    ) -> None:
        super().__init__(name=f"{queue.name}-{attribute}-{environment}", daemon=True)
        self.queue, self.function, self.attribute = queue, function, attribute
        self.environment, self.retry_seconds = environment, retry_seconds
        self.stopping = threading.Event()

    def run(self) -> None:
        while (m := self.queue.receive(self.stopping)) is not None:
            assert m.handle is not None
            try:
                result = invoke(
                    self.function,
                    {"Records": [self.queue.record(m)]},
                    attribute=self.attribute,
                    environment=self.environment,
                )
                failed = bool((result or {}).get("batchItemFailures"))
            except Exception:  # the mapping outlives a failed invocation, as on Lambda
                logger.exception("%s failed on a message of %s", self.function, self.queue.name)
                failed = True
            if failed:
                self.queue.release(m.handle, self.retry_seconds)
            else:
                self.queue.delete(m.handle)

    def stop(self) -> None:
        self.stopping.set()
        self.queue.close()
