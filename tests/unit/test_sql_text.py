"""Statements converted once to PostgreSQL's own placeholders (store/sql_text.py)."""

from __future__ import annotations

import re

import pytest

from cairn.store import claim, runs
from cairn.store.sql_text import Native, compact


def test_comments_and_white_space_go_and_quoted_text_stays() -> None:
    statement = """
    SELECT 'a  -- not a comment' AS "odd  name",  -- a comment
           'it''s' -- another
      FROM t
    """
    assert compact(statement) == """SELECT 'a  -- not a comment' AS "odd  name", 'it''s' FROM t"""


def test_placeholders_are_numbered_once_per_name_in_first_use_order() -> None:
    native = Native.of("SELECT %(b)s, %(a)s, %(b)s::int, 5 %% 2")
    assert native.text == b"SELECT $1, $2, $1::int, 5 % 2"
    assert native.names == ("b", "a")


@pytest.mark.parametrize("statement", ["SELECT 5 % 2", "SELECT $$x$$", "SELECT %s"])
def test_what_cannot_be_converted_safely_is_refused(statement: str) -> None:
    with pytest.raises(ValueError):
        Native.of(statement)


@pytest.mark.parametrize("statement", [claim.CLAIM, runs.START_RUN])
def test_the_long_statements_lose_nothing_but_layout(statement: str) -> None:
    """Every word of the statement (comments aside) is still there, in order."""
    native = Native.of(statement)
    words = re.sub(r"--[^\n]*", "", statement)
    for number, name in enumerate(native.names, 1):
        words = words.replace(f"%({name})s", f"${number}")
    assert native.text.decode().split() == words.replace("%%", "%").split()
    assert len(native.text) < len(statement)
