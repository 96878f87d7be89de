"""Long statements sent as PostgreSQL reads them: `$n` placeholders, no comments.

psycopg remembers how it turned a statement's `%(name)s` placeholders into `$n` ones only
for statements of at most 4,096 bytes (`MAX_CACHED_STATEMENT_LENGTH` in psycopg/_queries.py):
a longer one is split with a regular expression on every execution. The claim and a run's
start (8.0 and 5.2 KB, commented for the reader) are sent on every message: a `Native`
statement is converted once, when its module is imported, and executed by a `RawCursor`,
which sends it as it is.

Without server-side prepared statements (behind RDS Proxy, which they would pin),
PostgreSQL plans such a statement on every execution: the claim's plan alone cost about
1.7 ms of its CPU a step (bench/claim_window.py). The same statement made a PL/pgSQL
function (`plpgsql`, written once by a migration) has its plan kept by each database
session, which the proxy shares between its clients; `calling` is what invokes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import RawCursor
from psycopg.rows import dict_row

from cairn.store.db import Connection

# A quoted literal or identifier (kept as written), or a run of comments and white space.
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|(?:--[^\n]*|\s)+")
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%|%")


def compact(statement: str) -> str:
    """`statement` with each run of comments and white space outside quotes made one space.
    Dollar-quoted bodies are refused: their contents cannot be told from SQL here."""
    if "$" in statement:
        raise ValueError("a statement with `$` cannot be compacted")

    def one(match: re.Match[str]) -> str:
        token = match.group()
        return token if token[0] in "'\"" else " "

    return _TOKEN.sub(one, statement).strip()


@dataclass(frozen=True)
class Native:
    """A psycopg statement (`%(name)s` placeholders), compacted and numbered once."""

    text: bytes
    names: tuple[str, ...]

    @classmethod
    def of(cls, statement: str) -> Native:
        numbers: dict[str, int] = {}  # in first-use order

        def number(match: re.Match[str]) -> str:
            name = match.group(1)
            if name is None:
                if match.group() == "%":
                    raise ValueError("a lone `%` in a statement: write `%%`")
                return "%"
            return f"${numbers.setdefault(name, len(numbers) + 1)}"

        return cls(_PLACEHOLDER.sub(number, compact(statement)).encode(), tuple(numbers))

    def execute(
        self, conn: Connection, params: Mapping[str, Any], *, prepare: bool | None = None
    ) -> RawCursor[dict[str, Any]]:
        """Run on `conn` (in its pipeline, if one is open) with each name's value; `prepare`
        as psycopg's (True: at once, where the connection prepares statements at all)."""
        cursor = RawCursor(conn, row_factory=dict_row)
        return cursor.execute(self.text, [params[name] for name in self.names], prepare=prepare)

    def plpgsql(self, name: str, types: Sequence[str], columns: Sequence[tuple[str, str]]) -> str:
        """`CREATE OR REPLACE FUNCTION name` running this statement: its parameters' `types`
        in `$n` order, the `columns` (name, type) it returns (none: a statement that returns
        no rows, the function returns `void`). A migration holds the text; a test holds it
        alike to the statement's."""
        if len(types) != len(self.names):
            raise ValueError(f"{len(self.names)} parameters, {len(types)} types")
        returns = (
            f"TABLE ({', '.join(f'{column} {kind}' for column, kind in columns)})"
            if columns
            else "void"
        )
        return (
            f"CREATE OR REPLACE FUNCTION {name}({', '.join(types)}) RETURNS {returns}\n"
            f"    LANGUAGE plpgsql AS $body${function_body(self, rows=bool(columns))}$body$;\n"
        )

    def calling(self, name: str, types: Sequence[str]) -> Native:
        """The statement that runs function `name` (made by `plpgsql`) with the same names."""
        casts = ", ".join(f"${n}::{kind}" for n, kind in enumerate(types, start=1))
        return Native(f"SELECT * FROM {name}({casts})".encode(), self.names)

    def served(self, name: str, types: Sequence[str]) -> Served:
        return Served(self, name, tuple(types), self.calling(name, types))


@dataclass(frozen=True)
class Served:
    """A statement that is also function `name` (a migration made it with `plpgsql`): sent
    as it is where the connection prepares statements, else as the function's call."""

    statement: Native
    name: str
    types: tuple[str, ...]
    call: Native

    def execute(self, conn: Connection, params: Mapping[str, Any]) -> RawCursor[dict[str, Any]]:
        if conn.prepare_threshold is None:
            return self.call.execute(conn, params)
        # Prepared at its first run, not its third (store/db.py, PREPARE_AFTER): a step's
        # statements run on every step, and each run unprepared was planned in full (the
        # claim for about 1 ms) on every new connection, a Lambda process's first steps.
        return self.statement.execute(conn, params, prepare=True)


def function_body(statement: Native, *, rows: bool = True) -> str:
    """The PL/pgSQL body of `statement` made a function: with `rows`, its result columns are
    named as the function's, and a name is the column's where both could be meant."""
    text = statement.text.decode()
    if "$body$" in text:
        raise ValueError("the statement holds the function body's quote")
    if not rows:
        return f"\nBEGIN\n    {text};\nEND\n"
    return f"\n#variable_conflict use_column\nBEGIN\n    RETURN QUERY {text};\nEND\n"
