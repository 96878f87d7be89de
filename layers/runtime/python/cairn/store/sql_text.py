"""Long statements sent as PostgreSQL reads them: `$n` placeholders, no comments.

psycopg remembers how it turned a statement's `%(name)s` placeholders into `$n` ones only
for statements of at most 4,096 bytes (`MAX_CACHED_STATEMENT_LENGTH` in psycopg/_queries.py):
a longer one is split with a regular expression on every execution. The claim and a run's
start (8.0 and 5.2 KB, commented for the reader) are sent on every message: a `Native`
statement is converted once, when its module is imported, and executed by a `RawCursor`,
which sends it as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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

    def execute(self, conn: Connection, params: Mapping[str, Any]) -> RawCursor[dict[str, Any]]:
        """Run on `conn` (in its pipeline, if one is open) with each name's value."""
        cursor = RawCursor(conn, row_factory=dict_row)
        return cursor.execute(self.text, [params[name] for name in self.names])
