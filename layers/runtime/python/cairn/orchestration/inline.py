"""A step queue inside the process: a worker thread runs each command on the engine.

For the local stack without SQS, and for tests of the API that are not about SQS. Same
contract as the SQS queue: at least once, in order; a step for a busy agent waits in the
outbox until the run holding the agent ends.
"""

from __future__ import annotations

import logging
import queue
import threading

from cairn.domain.runs import OutboxCommand
from cairn.engine.step import Engine
from cairn.orchestration.dispatch import after_step

logger = logging.getLogger(__name__)


class InlineStepQueue:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._queue: queue.Queue[OutboxCommand | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="cairn-steps", daemon=True)
        self._thread.start()

    def publish(self, command: OutboxCommand) -> None:
        self._queue.put(command)

    def idle(self) -> bool:
        return self._queue.unfinished_tasks == 0

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
                logger.exception(
                    "step %s failed; it stays in the outbox for the sweeper",
                    command.dedup_key if command else "?",
                )
            finally:
                self._queue.task_done()

    def _run(self, command: OutboxCommand) -> None:
        p = command.payload
        outcome = self.engine.step(p["organization_id"], p["run_id"], p["step_index"])
        after_step(self.engine.db, self, command, outcome)
