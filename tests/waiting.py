"""Waiting on a condition, not on a clock: a test polls for what it expects and fails, naming
what never came, only past a ceiling generous enough for a machine busy with other work."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

CEILING_SECONDS = 60.0


def eventually(
    probe: Callable[[], T | None], timeout: float = CEILING_SECONDS, pause: float = 0.05
) -> T:
    """The probe's first truthy answer, polled every `pause` seconds until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        if got := probe():
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"nothing came of {getattr(probe, '__name__', probe)} within {timeout} s")
        time.sleep(pause)
