"""Agents' secrets (Letta's agent_environment_variables) come over sealed here: opened with
the Letta server's LETTA_ENCRYPTION_KEY where it stored them encrypted, taken as they are
where it had none; one that does not open is left out and named. The fixture's server had
none, so these tests add rows to their own restored copy of its dump, as Letta writes them."""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest

from cairn.assembly.operator import import_letta
from cairn.sealing import Sealer
from cairn.store import agent_secrets
from cairn.store.db import Database
from tests.integration.test_letta_import import ORG, letta_url
from tests.integration.test_letta_import_providers import LETTA_KEY, letta_encrypt

AGENT = "agent-b6b3b13b-df61-44c3-9397-657073e1a68b"  # fixture-agent-c
# (id, key, legacy value, value_enc, deleted)
ROWS = [
    ("agent-env-00000001", "API_TOKEN", "", letta_encrypt("tok-sealed-1", LETTA_KEY), False),
    ("agent-env-00000002", "REGION", "eu-west-1", None, False),  # before value_enc
    ("agent-env-00000003", "LOCKED", "", letta_encrypt("x", "another-server's-key"), False),
    ("agent-env-00000004", "GONE", "old", None, True),
]


@pytest.fixture
def letta_with_secrets(pg_dsn: str) -> Iterator[str]:
    restored = letta_url.__wrapped__(pg_dsn)  # type: ignore[attr-defined]
    copy: str = next(restored)
    with psycopg.connect(copy, autocommit=True) as conn:
        for row_id, key, value, sealed, deleted in ROWS:
            conn.execute(
                """INSERT INTO agent_environment_variables (id, key, value, value_enc,
                       is_deleted, organization_id, agent_id)
                   VALUES (%s, %s, %s, %s, %s, %s, %s)""",
                (row_id, key, value, sealed, deleted, ORG, AGENT),
            )
    yield copy
    next(restored, None)


def test_agents_secrets_come_over_opened_and_sealed_here(
    db: Database, letta_with_secrets: str
) -> None:
    key = os.urandom(32)
    sealer = Sealer(lambda: key)
    report = import_letta(db, letta_with_secrets, letta_key=LETTA_KEY, sealer=sealer)
    with db.connection() as conn:
        found = agent_secrets.opened(conn, sealer, ORG, [AGENT])[AGENT]
        stored = conn.execute(
            "SELECT value_sealed FROM agent_secrets WHERE agent_id = %s", (AGENT,)
        ).fetchall()
    assert {s.key: s.value for s in found} == {"API_TOKEN": "tok-sealed-1", "REGION": "eu-west-1"}
    assert all(b"tok-sealed-1" not in bytes(r["value_sealed"]) for r in stored)
    skipped = "\n".join(report.skipped)
    assert f"agent {AGENT}: secret LOCKED: it does not open" in skipped
    assert "GONE" not in skipped and "tok-" not in skipped  # no value in the report
