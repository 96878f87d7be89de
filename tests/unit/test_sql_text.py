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


def test_a_statement_made_a_function_and_the_call_that_runs_it() -> None:
    native = Native.of("SELECT %(a)s::int + %(b)s AS total, %(a)s AS again")
    made = native.plpgsql("f", ["integer", "integer"], [("total", "integer"), ("again", "integer")])
    assert made.startswith("CREATE OR REPLACE FUNCTION f(integer, integer) RETURNS TABLE ")
    assert "(total integer, again integer)" in made
    assert "#variable_conflict use_column" in made
    assert "RETURN QUERY SELECT $1::int + $2 AS total, $1 AS again;" in made
    call = native.calling("f", ["integer", "integer"])
    assert call.text == b"SELECT * FROM f($1::integer, $2::integer)"
    assert call.names == native.names == ("a", "b")
    with pytest.raises(ValueError):
        native.plpgsql("f", ["integer"], [("total", "integer")])
