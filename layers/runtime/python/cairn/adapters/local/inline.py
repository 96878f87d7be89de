"""Queues and workflows inside the process, for the local stack without SQS or Step Functions
and for tests of the API that are not about them.

As on AWS, a queue holds commands and something else consumes them: `InlineStepQueue` and
`InlineWorkflows` are given to the Runtime, and `serve(rt)` then starts a consumer thread for
each with the runtime given at its construction (SQS is the queue and the Lambda event source
mapping the consumer). Same contract as the SQS queue: at least once, in order; a step for a
busy agent waits in the outbox until the run holding the agent ends.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cairn.domain.runs import OutboxCommand
from cairn.run import later
from cairn.run.driving import worker

if TYPE_CHECKING:
    from cairn.run.runtime import Runtime

logger = logging.getLogger(__name__)


class InlineStepQueue:
    """Commands in memory, in order; `InlineConsumer` takes them."""

    def __init__(self) -> None:
        self._queue: queue.Queue[OutboxCommand | None] = queue.Queue()
        self._stopped = threading.Event()

    def publish(self, command: OutboxCommand) -> None:
        self._queue.put(command)

    def idle(self) -> bool:
        """Nothing queued, running, or still to be published after a reply (`later`)."""
        return self._queue.unfinished_tasks == 0 and later.idle()

    def close(self) -> None:
        """Stop its consumer once what is queued before is done (waits at most 5 s)."""
        self._queue.put(None)
        self._stopped.wait(timeout=5)

    # The consumer's side.
    def take(self) -> OutboxCommand | None:
        """The next command, waiting for one; None once the queue is closed."""
        command = self._queue.get()
        if command is None:
            self._queue.task_done()
            self._stopped.set()
        return command

    def done(self) -> None:
        """The command last taken is finished (or handed back for a retry)."""
        self._queue.task_done()


class InlineWorkflows:
    """The workflows without Step Functions: approvals wait without a timeout, and a
    sleeptime fan-out is queued for a consumer that starts its runs without waiting for them."""

    def __init__(self) -> None:
        self.fan_outs = InlineStepQueue()

    def start(self, command: OutboxCommand) -> None:
        if command.kind == "sleeptime":
            self.fan_outs.publish(command)

    def succeed(self, token: str, output: dict[str, Any]) -> bool:
        return False

    def fail(self, token: str, error: str, cause: str) -> bool:
        return False


class InlineConsumer:
    """A thread that runs each command of one inline queue on the runtime it is given.

    Like SQS: a command that raises is delivered again a little later, and dead-lettered
    after the last attempt (`dead`, when the queue has a dead-letter meaning)."""

    def __init__(
        self,
        rt: Runtime,
        source: InlineStepQueue,
        run: Callable[[Runtime, OutboxCommand], object],
        *,
        dead: Callable[[Runtime, OutboxCommand, int], object] | None = None,
        max_attempts: int = 3,
        retry_seconds: float = 1.0,
    ) -> None:
        self.rt, self.source, self.run, self.dead = rt, source, run, dead
        self.max_attempts, self.retry_seconds = max_attempts, retry_seconds
        self._attempts: dict[str, int] = {}
        self._thread = threading.Thread(target=self._work, name="cairn-inline", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while (command := self.source.take()) is not None:
            try:
                self.run(self.rt, command)
            except Exception:
                self._failed(command)
            finally:
                self.source.done()

    def _failed(self, command: OutboxCommand) -> None:
        key = command.dedup_key
        attempts = self._attempts[key] = self._attempts.get(key, 0) + 1
        logger.exception("inline command %s failed (attempt %d)", key, attempts)
        if attempts < self.max_attempts:
            timer = threading.Timer(self.retry_seconds, self.source.publish, args=(command,))
            timer.daemon = True
            timer.start()
        elif self.dead is not None:
            self.dead(self.rt, command, attempts)


def serve(rt: Runtime) -> None:
    """Start a consumer for each inline part of the runtime (none for SQS or Step Functions)."""
    queues = {id(q): q for q in (rt.queue.steps, rt.queue.embeddings, rt.queue.files)}
    for source in queues.values():
        if isinstance(source, InlineStepQueue):
            InlineConsumer(rt, source, _run_step, dead=_dead_letter)
    if isinstance(rt.workflows, InlineWorkflows):
        # A failed fan-out is logged, not retried (as Step Functions' would fail its execution).
        InlineConsumer(rt, rt.workflows.fan_outs, _fan_out, max_attempts=1)


def _run_step(rt: Runtime, command: OutboxCommand) -> None:
    worker.run_step(rt, command.payload, command)


def _dead_letter(rt: Runtime, command: OutboxCommand, attempts: int) -> None:
    worker.dead_letter(rt, json.dumps(command.payload), attempts)


def _fan_out(rt: Runtime, command: OutboxCommand) -> None:
    from cairn.run.driving import tasks

    plan = tasks.sleeptime_task(rt, {**command.payload, "action": "plan"})
    for item in plan["items"]:
        tasks.start_background(rt, item, None)
    tasks.sleeptime_task(rt, {**command.payload, "action": "finish"})
