"""Named points in a step where tests make the process "die", to prove a retry recovers.

Production code calls `reached(point)`; it costs a global read when nothing is armed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal

FaultPoint = Literal[
    "before_llm",
    "after_journal",
    "between_tools",
    "before_commit",
    "inside_commit",  # every statement of the checkpoint sent and checked; COMMIT not yet
    "after_commit",
    "file_parsed",  # a file job: its text and chunk count written, nothing embedded
    "file_batch",  # a file job: a batch of chunks embedded and written
    "inside_rewind",  # a rewind's every statement sent; COMMIT not yet
    "inside_fork",  # a fork's every statement sent; COMMIT not yet
]


class SimulatedCrash(BaseException):
    """Not an Exception, so no `except Exception` on the way up can swallow the crash."""


_armed: Callable[[FaultPoint], None] | None = None


def reached(point: FaultPoint) -> None:
    if _armed is not None:
        _armed(point)


def arm(hook: Callable[[FaultPoint], None]) -> None:
    """Call `hook` at every point from now on (a crash test's process arms it at start)."""
    global _armed
    _armed = hook


@contextmanager
def run_at(point: FaultPoint, action: Callable[[], None], *, times: int = 1) -> Iterator[None]:
    """Run `action` when `point` is reached (e.g. a person editing a block mid-step).

    Nests: an outer `run_at` keeps firing at its own point."""
    global _armed
    left = [times]
    outer = _armed

    def hook(reached_point: FaultPoint) -> None:
        if outer is not None:
            outer(reached_point)
        if reached_point == point and left[0] > 0:
            left[0] -= 1
            action()

    _armed = hook
    try:
        yield
    finally:
        _armed = outer


@contextmanager
def crash_at(point: FaultPoint, *, times: int = 1) -> Iterator[list[FaultPoint]]:
    """Raise SimulatedCrash the first `times` times `point` is reached; yields what fired."""
    global _armed
    fired: list[FaultPoint] = []

    def hook(reached_point: FaultPoint) -> None:
        if reached_point == point and len(fired) < times:
            fired.append(reached_point)
            raise SimulatedCrash(point)

    _armed = hook
    try:
        yield fired
    finally:
        _armed = None
