"""Settling the heap: what lives now leaves the collector's generations, once per reason."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from cairn import heap


@pytest.fixture
def fresh() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()
    heap._settled.discard("test")


def test_settle_moves_what_lives_out_of_every_generation_once(fresh: None) -> None:
    long_lived = {"a": [1, 2, 3]}
    assert any(o is long_lived for o in gc.get_objects())
    heap.settle("test")
    frozen = gc.get_freeze_count()
    assert frozen > 0 and not any(o is long_lived for o in gc.get_objects())
    later = {"b": [4]}
    heap.settle("test")  # a second call for the same reason freezes nothing more
    assert gc.get_freeze_count() == frozen and any(o is later for o in gc.get_objects())
