"""The step journal: what a step did that must not be done twice (the model's answer with
tool calls, a tool's outside effects), keyed by run, step and key; first writer wins."""

from __future__ import annotations

from typing import Any

from cairn.domain.runs import JournalEntry
from cairn.store.db import Connection
from cairn.store.rows import to_params

# First writer wins: a retry that reaches the journal again keeps the original entry.
INSERT_JOURNAL = """
INSERT INTO step_journal (run_id, step_index, key, organization_id, payload, created_at)
VALUES (%(run_id)s, %(step_index)s, %(key)s, %(organization_id)s, %(payload)s, %(created_at)s)
ON CONFLICT (run_id, step_index, key) DO NOTHING
"""


SELECT_JOURNAL = """
SELECT * FROM step_journal
WHERE organization_id = %(org)s AND run_id = %(run_id)s AND step_index = %(step_index)s
ORDER BY created_at, key
"""


def write(conn: Connection, entry: JournalEntry) -> None:
    conn.execute(INSERT_JOURNAL, to_params(entry, ("payload",)))


# Insert, or read what another delivery journaled first: one round trip either way.
JOURNAL_ONCE = """
WITH ins AS (
    INSERT INTO step_journal (run_id, step_index, key, organization_id, payload, created_at)
    VALUES (%(run_id)s, %(step_index)s, %(key)s, %(organization_id)s, %(payload)s,
            %(created_at)s)
    ON CONFLICT (run_id, step_index, key) DO NOTHING
    RETURNING payload
)
SELECT payload FROM ins
UNION ALL
SELECT payload FROM step_journal
WHERE run_id = %(run_id)s AND step_index = %(step_index)s AND key = %(key)s
  AND NOT EXISTS (SELECT 1 FROM ins)
"""


def write_once(conn: Connection, entry: JournalEntry) -> dict[str, Any]:
    """Journal the entry unless one exists; return the payload that is now journaled."""
    row = conn.execute(JOURNAL_ONCE, to_params(entry, ("payload",))).fetchone()
    assert row is not None
    return dict(row["payload"])


def entries(conn: Connection, org_id: str, run_id: str, step_index: int) -> dict[str, JournalEntry]:
    rows = conn.execute(
        SELECT_JOURNAL, {"org": org_id, "run_id": run_id, "step_index": step_index}
    ).fetchall()
    return {r["key"]: JournalEntry.model_validate(r) for r in rows}
