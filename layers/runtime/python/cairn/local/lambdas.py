"""Run the Lambda handlers of `functions/` in this process, as the Lambda runtime would.

Handlers are loaded from their files (nothing in cairn imports a handler module), each once.
A Lambda execution environment serves one invocation at a time, and Powertools relies on
it: its resolver keeps the current event in a class attribute shared by the process. So one
invocation of a function runs at a time here too. A sync send waits for its run, and that
wait gives the function back to other callers (`released`), as separate Lambdas would run.
A function whose handler keeps no such class state (the step worker) can have several
`environment`s: each loads its own copy of the handler module and serves one invocation at
a time, as Lambda runs concurrent invocations in separate execution environments.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import cairn

Handler = Callable[[dict[str, Any], Any], Any]


def functions_dir() -> Path:
    if configured := os.environ.get("CAIRN_FUNCTIONS_DIR"):
        return Path(configured)
    # layers/runtime/python/cairn/__init__.py -> the repository root
    return Path(cairn.__file__).resolve().parents[4] / "functions"


# Each function's timeout as the CDK app sets it (infra/cairn_infra/functions.py): handlers
# plan within the time left, so the local stack counts it down as Lambda does.
TIMEOUT_MS = {"api": 29_000, "stream": 900_000, "step": 300_000, "sweeper": 120_000,
              "migrate": 300_000}  # fmt: skip


@dataclass
class LocalContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    function_name: str
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    timeout_ms: int = 30_000
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.timeout_ms = TIMEOUT_MS.get(self.function_name, self.timeout_ms)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:000000000000:function:cairn-{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.timeout_ms - int((time.monotonic() - self.started) * 1000))


@cache
def load_handler(name: str, attribute: str = "handler", environment: int = 0) -> Handler:
    path = functions_dir() / name / "handler.py"
    if not path.is_file():
        raise FileNotFoundError(f"no handler at {path}")
    spec = importlib.util.spec_from_file_location(f"cairn_function_{name}_{environment}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Handler = getattr(module, attribute)
    return handler


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()
_held = threading.local()


def invoke(
    name: str, event: dict[str, Any], *, attribute: str = "handler", environment: int = 0
) -> Any:
    with _locks_guard:
        lock = _locks.setdefault(f"{name}.{attribute}.{environment}", threading.Lock())
    with lock:
        _held.lock = lock
        try:
            handler = load_handler(name, attribute, environment)
            return handler(event, LocalContext(function_name=name))
        finally:
            _held.lock = None


@contextmanager
def released() -> Iterator[None]:
    """Let other invocations of this function run while this one waits (on a sleep, or a
    model call of a sync send's step), as concurrent Lambda environments would."""
    lock: threading.Lock | None = getattr(_held, "lock", None)
    if lock is None:
        yield
        return
    from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

    # Powertools reads the event again after the route returns: put this one back.
    saved = BaseRouter.current_event, BaseRouter.lambda_context
    _held.lock = None  # a nested release (an embedding inside a sync send's step) is a no-op
    lock.release()
    try:
        yield
    finally:
        lock.acquire()
        _held.lock = lock
        BaseRouter.current_event, BaseRouter.lambda_context = saved
