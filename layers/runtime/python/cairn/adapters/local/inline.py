"""A step queue inside the process: a worker thread runs each command (`worker.run_step`).

For the local stack without SQS, and for tests of the API that are not about SQS. Same
contract as the SQS queue: at least once, in order; a step for a busy agent waits in the
outbox until the run holding the agent ends.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from typing import TYPE_CHECKING, Any

from cairn.domain.runs import OutboxCommand
from cairn.run import later, worker

if TYPE_CHECKING:
    from cairn.run.runtime import Runtime

logger = logging.getLogger(__name__)


class InlineStepQueue:
    def __init__(self, *, max_attempts: int = 3, retry_seconds: float = 1.0) -> None:
        self.max_attempts, self.retry_seconds = max_attempts, retry_seconds
        self._attempts: dict[str, int] = {}
        self._queue: queue.Queue[OutboxCommand | None] = queue.Queue()
        # Its commands run on the runtime it belongs to (continuations go where that routes).
        self.rt: Runtime | None = None
        self._thread = threading.Thread(target=self._work, name="cairn-steps", daemon=True)
        self._thread.start()

    def attach(self, rt: Runtime) -> None:
        self.rt = rt

    def publish(self, command: OutboxCommand) -> None:
        self._queue.put(command)

    def idle(self) -> bool:
        """Nothing queued, running, or still to be published after a reply (`later`)."""
        return self._queue.unfinished_tasks == 0 and later.idle()

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5)

    def _work(self) -> None:
        while True:
            command = self._queue.get()
            try:
                if command is None:
                    return
                self._run(command)
            except Exception:
                assert command is not None
                self._failed(command)
            finally:
                self._queue.task_done()

    def _failed(self, command: OutboxCommand) -> None:
        """Like SQS: deliver again a little later, and dead-letter after the last attempt."""
        attempts = self._attempts[command.dedup_key] = self._attempts.get(command.dedup_key, 0) + 1
        logger.exception("step %s failed (attempt %d)", command.dedup_key, attempts)
        if attempts < self.max_attempts:
            timer = threading.Timer(self.retry_seconds, self.publish, args=(command,))
            timer.daemon = True
            timer.start()
            return
        if self.rt is not None:
            worker.dead_letter(self.rt, json.dumps(command.payload), attempts)

    def _run(self, command: OutboxCommand) -> None:
        assert self.rt is not None, "the runtime attaches its queues (build_runtime)"
        worker.run_step(self.rt, command.payload, command)


class InlineWorkflows:
    """The workflows without Step Functions: approvals wait without a timeout, and the
    sleeptime fan-out starts its runs from a thread without waiting for them."""

    def __init__(self) -> None:
        self.rt: Runtime | None = None

    def attach(self, rt: Runtime) -> None:
        self.rt = rt

    def start(self, command: OutboxCommand) -> None:
        if command.kind == "sleeptime" and self.rt is not None:
            threading.Thread(target=self._fan_out, args=(command.payload,), daemon=True).start()

    def _fan_out(self, payload: dict[str, Any]) -> None:
        from cairn.run import tasks

        assert self.rt is not None
        try:
            plan = tasks.sleeptime_task(self.rt, {**payload, "action": "plan"})
            for item in plan["items"]:
                tasks.start_background(self.rt, item, None)
            tasks.sleeptime_task(self.rt, {**payload, "action": "finish"})
        except Exception:
            logger.exception("sleeptime fan-out failed")

    def succeed(self, token: str, output: dict[str, Any]) -> bool:
        return False

    def fail(self, token: str, error: str, cause: str) -> bool:
        return False
