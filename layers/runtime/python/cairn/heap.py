"""Keeping the cyclic garbage collector off what lives as long as the process.

A warm Lambda keeps its imported modules, pydantic models, SDK clients and pools for every
invocation; a full collection still walks all of them, and those pauses made the tail of
one-step turns (bench/step_overhead.py, p99 ~89 ms against ~33 ms once frozen).
"""

from __future__ import annotations

import gc
import threading

_settled: set[str] = set()
_lock = threading.Lock()
# A message's request makes thousands of short-lived containers, most freed by reference
# counting. At CPython's default (a young collection at every 700 more allocations than
# frees) a message paid 0.13-0.24 ms of collections, at 5,000 about 0.05 ms
# (bench/collections_cost.py, docs/numbers.md). What a cycle holds waits a little longer.
YOUNG_THRESHOLD = 5_000


def settle(what: str) -> None:
    """Once per `what` and process: move every object alive now to the collector's permanent
    generation. Called right after the long-lived objects come to be (the HTTP app's import,
    the runtime, a provider SDK's first import). Reference counting still frees them; only
    cycles among them would stay, and these are not garbage. Young collections run less
    often from then on (YOUNG_THRESHOLD)."""
    with _lock:
        if what in _settled:
            return
        _settled.add(what)
    gc.freeze()
    young, *older = gc.get_threshold()
    if young < YOUNG_THRESHOLD:
        gc.set_threshold(YOUNG_THRESHOLD, *older)
