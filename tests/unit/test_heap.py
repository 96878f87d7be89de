"""Settling the heap: what lives now leaves the collector's generations, once per reason."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from cairn import heap


@pytest.fixture
def fresh() -> Iterator[None]:
    yield
    heap._settled.discard("test")
    heap._settled.discard("test-once")


def test_settle_moves_what_lives_out_of_the_generations(fresh: None) -> None:
    long_lived = {"a": [1, 2, 3]}
    assert any(o is long_lived for o in gc.get_objects())
    heap.settle("test")
    assert not any(o is long_lived for o in gc.get_objects())
    assert gc.get_freeze_count() > 0


def test_settle_freezes_once_per_reason(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Other threads of the suite may settle too: count this thread's freezes only.
    mine: list[int] = []
    me = threading.current_thread()
    freeze = lambda: mine.append(1) if threading.current_thread() is me else None  # noqa: E731
    monkeypatch.setattr(
        heap,
        "gc",
        SimpleNamespace(
            freeze=freeze, get_threshold=gc.get_threshold, set_threshold=lambda *_: None
        ),
    )
    heap.settle("test-once")
    heap.settle("test-once")
    assert len(mine) == 1


def test_settle_makes_young_collections_rarer(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """From CPython's default of 700 to YOUNG_THRESHOLD; the older generations as they were."""
    before = gc.get_threshold()
    monkeypatch.setattr(heap, "_settled", set())
    try:
        gc.set_threshold(700, 13, 17)
        heap.settle("test")
        assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, 13, 17)
        gc.set_threshold(heap.YOUNG_THRESHOLD * 2, 13, 17)  # set higher by someone: kept
        heap.settle("test-once")
        assert gc.get_threshold() == (heap.YOUNG_THRESHOLD * 2, 13, 17)
    finally:
        gc.set_threshold(*before)
