"""The context window: which messages an agent's next step reads, in order.

One row per entry (agent, position, message), so a step writes only what changed: the
entries of its new messages, and the deletions of those a compaction evicts. (It used to
be an array on the agent row, rewritten whole by every checkpoint: a few hundred ids, and
a new version of the agent row's TOASTed array each step.) Positions keep gaps where they
can: appending takes the next number, a new system message or summary slots in before or
after its neighbours, and only an order no gap allows (a client reordering the window)
renumbers the lot.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from cairn.errors import not_found
from cairn.store import history
from cairn.store.db import Connection
from cairn.store.sql_text import Native

Entry = tuple[int, str]  # (position, message id)

SELECT_ENTRIES = """
SELECT position, message_id FROM context_entries WHERE agent_id = %(agent_id)s ORDER BY position
"""
DELETE_ENTRIES = """
DELETE FROM context_entries WHERE agent_id = %(agent_id)s AND position = ANY(%(positions)s)
"""
# Only messages of the organization: an id it does not hold inserts nothing (and is named).
INSERT_ENTRIES = """
INSERT INTO context_entries (agent_id, position, message_id, organization_id)
SELECT %(agent_id)s, e.position, m.id, m.organization_id
FROM unnest(%(positions)s::bigint[], %(ids)s::text[]) AS e (position, message_id)
JOIN messages m ON m.id = e.message_id AND m.organization_id = %(org)s
RETURNING message_id
"""
# Behind RDS Proxy (no prepared statements) PostgreSQL planned this on every step, about 0.12 ms of
# its CPU: a function too, migration 0050 (store/sql_text.py; a change needs a new migration).
INSERTING_ENTRIES = Native.of(INSERT_ENTRIES).served(
    "cairn_insert_entries", ("text", "bigint[]", "text[]", "text")
)
# The agent's context window as a column of an agents query (`a` the agent row).
MESSAGE_IDS = (
    "ARRAY(SELECT e.message_id FROM context_entries e WHERE e.agent_id = a.id"
    " ORDER BY e.position) AS message_ids"
)


class Changes(NamedTuple):
    removed: list[Entry]  # entries that go
    added: list[Entry]  # entries to write

    @property
    def positions_removed(self) -> list[int]:
        return [p for p, _ in self.removed]

    def __bool__(self) -> bool:
        return bool(self.removed or self.added)


def read(conn: Connection, agent_id: str) -> list[Entry]:
    rows = conn.execute(SELECT_ENTRIES, {"agent_id": agent_id}).fetchall()
    return [(r["position"], r["message_id"]) for r in rows]


def plan(old: list[Entry], new_ids: list[str]) -> Changes:
    """The fewest entry writes that turn `old` into `new_ids`, in that order."""
    appended = _appended(old, new_ids)
    if appended is not None:
        return Changes(removed=[], added=appended)
    positions = _positions(old, new_ids)
    wanted = set(zip(positions, new_ids, strict=True))
    had = set(old)
    return Changes(
        removed=[(p, i) for p, i in old if (p, i) not in wanted],
        added=[(p, i) for p, i in zip(positions, new_ids, strict=True) if (p, i) not in had],
    )


def _appended(old: list[Entry], new_ids: list[str]) -> list[Entry] | None:
    """A step's usual change, its messages after the window's, without walking the window
    in Python as `_positions` does (0.2-0.6 ms a step at windows of 100-400): the entries
    of the new ids, numbered on from the last, or None for any other change. The same as
    the general plan gives, duplicates aside (they renumber all there)."""
    n = len(old)
    if not old or len(new_ids) < n or len(set(new_ids)) != len(new_ids):
        return None
    if new_ids[:n] != [message_id for _, message_id in old]:
        return None
    last = old[-1][0]
    return [(last + k, message_id) for k, message_id in enumerate(new_ids[n:], start=1)]


def _positions(old: list[Entry], new_ids: list[str]) -> list[int]:
    at: dict[str, int] = {}
    for position, message_id in old:
        at.setdefault(message_id, position)
    kept = [at.get(i) for i in new_ids]
    known = [p for p in kept if p is not None]
    if any(a >= b for a, b in itertools.pairwise(known)):
        return list(range(len(new_ids)))  # kept entries change order: renumber all
    out: list[int | None] = list(kept)
    k, n = 0, len(new_ids)
    while k < n:
        if out[k] is not None:
            k += 1
            continue
        j = k
        while j < n and out[j] is None:
            j += 1
        left = out[k - 1] if k > 0 else None
        right = out[j] if j < n else None
        count = j - k
        if left is None:
            start = 0 if right is None else right - count
        elif right is None or right - left > count:
            start = left + 1
        else:
            return list(range(n))  # no gap wide enough: renumber all
        out[k:j] = range(start, start + count)
        k = j
    return [p for p in out if p is not None]


def write(conn: Connection, org_id: str, agent_id: str, changes: Changes, *, version: int) -> None:
    """Apply the changes (in the caller's transaction), logged as the agent's `version`'s
    (store/history.py); a message id the organization does not hold is a NotFoundError."""
    if not changes:
        return
    history.INSERTING_CHANGES.execute(
        conn, history.change_params(agent_id, version, changes.removed, changes.added)
    )
    if changes.removed:
        conn.execute(DELETE_ENTRIES, {"agent_id": agent_id, "positions": changes.positions_removed})
    if changes.added:
        params = entry_params(org_id, agent_id, changes.added)
        written = {r["message_id"] for r in INSERTING_ENTRIES.execute(conn, params).fetchall()}
        missing = [i for _, i in changes.added if i not in written]
        if missing:
            raise not_found(f"Message(s) not found: {', '.join(missing)}")


def entry_params(org_id: str, agent_id: str, entries: list[Entry]) -> dict[str, object]:
    return {
        "agent_id": agent_id,
        "org": org_id,
        "positions": [p for p, _ in entries],
        "ids": [i for _, i in entries],
    }


def replace(
    conn: Connection, org_id: str, agent_id: str, new_ids: list[str], *, version: int
) -> None:
    """Make the agent's context window `new_ids`, writing only the entries that change, as
    the agent's `version` (the one its row now has)."""
    write(conn, org_id, agent_id, plan(read(conn, agent_id), new_ids), version=version)
