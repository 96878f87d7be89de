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
from abc import ABCMeta
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
TIMEOUT_MS = {
    "api": 29_000,
    "stream": 900_000,
    "step": 300_000,
    "sweeper": 120_000,
    "migrate": 300_000,
}


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
_next = [0]  # where a request waits when every environment is busy (in turn)


def invoke_pooled(name: str, event: dict[str, Any], environments: int) -> Any:
    """`invoke` in the first free of `environments` execution environments of the function,
    as Lambda runs concurrent invocations each in an environment of its own: a slow request
    holds its environment, never the others. When all are busy it waits for one in turn."""
    if environments > 1:
        per_thread_powertools()
    for n in range(environments):
        lock = _lock(name, "handler", n)
        if lock.acquire(blocking=False):
            return _run(lock, name, event, "handler", n)
    with _locks_guard:
        n = _next[0] = (_next[0] + 1) % environments
    return invoke(name, event, environment=n)


def _lock(name: str, attribute: str, environment: int) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(f"{name}.{attribute}.{environment}", threading.Lock())


_patched = threading.Lock()
_powertools = threading.local()


def per_thread_powertools() -> None:
    """Powertools' resolver keeps the request being resolved in class attributes of
    `BaseRouter` (`current_event`, `lambda_context`), shared by every resolver of the
    process: right on Lambda (one invocation per process at a time), wrong for environments
    in threads. Here they become per thread, for reads through the class and through its
    instances alike. A workaround for local concurrency only; nothing on AWS runs it.
    (Overlapping requests overwriting each other's event in one resolver process is
    aws-powertools/powertools-lambda-python#8451, fixed there for its ASGI path only.)"""
    from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

    with _patched:
        if isinstance(BaseRouter, _PerThread):
            return

        # Instances find these in the class's dictionary, the class itself in its type's.
        BaseRouter.current_event = _per_thread("current_event")
        BaseRouter.lambda_context = _per_thread("lambda_context")
        BaseRouter.__class__ = _PerThread  # type: ignore[method-assign,assignment]


def _per_thread(name: str) -> Any:
    """A property whose value is this thread's (for a class, or for its instances)."""
    return property(
        lambda _self: getattr(_powertools, name, None),
        lambda _self, value: setattr(_powertools, name, value),
    )


class _PerThread(ABCMeta):  # BaseRouter's own type is ABCMeta: the same layout
    current_event = _per_thread("current_event")
    lambda_context = _per_thread("lambda_context")


def invoke(
    name: str, event: dict[str, Any], *, attribute: str = "handler", environment: int = 0
) -> Any:
    lock = _lock(name, attribute, environment)
    lock.acquire()
    return _run(lock, name, event, attribute, environment)


def _run(
    lock: threading.Lock, name: str, event: dict[str, Any], attribute: str, environment: int
) -> Any:
    """The invocation, in an environment whose lock this thread holds (released at the end,
    whoever holds it then: `released` may have given it up and taken it back)."""
    _held.lock = lock
    try:
        handler = load_handler(name, attribute, environment)
        return handler(event, LocalContext(function_name=name))
    finally:
        _held.lock = None
        lock.release()


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
