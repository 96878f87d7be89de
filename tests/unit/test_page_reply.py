"""A page of messages or a run's messages: serialised once, cut to fit a response."""

from __future__ import annotations

import json

import pytest

from cairn.api import http

ITEMS = [
    {"id": f"message-{n}", "text": "é" * n, "n": n, "nested": {"ok": n % 2 == 0}} for n in range(8)
]


def test_a_page_that_fits_is_the_json_of_its_items() -> None:
    reply = http.page_reply(ITEMS)
    assert reply.status_code == 200 and reply.body == json.dumps(ITEMS)
    assert json.loads(reply.body) == ITEMS


@pytest.mark.parametrize("keep_end", [False, True])
def test_a_page_too_large_keeps_the_run_from_its_start_or_end_that_fits(
    monkeypatch: pytest.MonkeyPatch, keep_end: bool
) -> None:
    limit = len(json.dumps(ITEMS[:3])) + 5
    monkeypatch.setattr(http, "PAGE_BYTES", limit)
    body = http.page_reply(ITEMS, keep_end=keep_end).body
    assert isinstance(body, str) and len(body) <= limit
    shown = json.loads(body)
    assert shown == (ITEMS[-len(shown) :] if keep_end else ITEMS[: len(shown)]) and shown
    # one more item would not have fitted
    more = ITEMS[-len(shown) - 1 :] if keep_end else ITEMS[: len(shown) + 1]
    assert len(json.dumps(more)) > limit


def test_one_item_larger_than_a_page_is_still_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "PAGE_BYTES", 10)
    assert json.loads(http.page_reply(ITEMS).body) == ITEMS[:1]
