"""Work a caller need not wait for, run by one thread of this process after it returns:
publishing a step's embedding job once the reply is committed, so no request waits on it.

Nothing depends on it running: a job lost with this process leaves its messages to the
sweeper's backfill, which embeds whatever has no embedding yet. On Lambda, an environment
frozen after its answer finishes the work in its next invocation; the step worker waits
for it before answering (`settle`), which is off every request path.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)
_work: queue.Queue[tuple[Callable[..., Any], tuple[Any, ...]]] = queue.Queue()
_started = threading.Lock()
_thread: threading.Thread | None = None


def call(fn: Callable[..., Any], *args: Any) -> None:
    """Run `fn(*args)` on the background thread, after what was handed over before it."""
    global _thread
    _work.put((fn, args))
    with _started:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="cairn-later", daemon=True)
            _thread.start()


def idle() -> bool:
    return _work.unfinished_tasks == 0


def settle() -> None:
    """Wait until everything handed over so far has run."""
    _work.join()


def _run() -> None:
    while True:
        fn, args = _work.get()
        try:
            fn(*args)
        except Exception:  # nothing waits on it: the sweeper's backfill embeds what is missing
            logger.exception("background work %s failed", getattr(fn, "__name__", fn))
        finally:
            _work.task_done()
