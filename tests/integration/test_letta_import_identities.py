"""Identities come over from Letta with their links to the agents and blocks that came. The
fixture's server had none, so this test adds them to its own restored copy of the dump, as
Letta 0.16.1 stores them."""

from __future__ import annotations

import json

import psycopg

from cairn.assembly.operator import import_letta
from cairn.domain.agents import AgentFilter
from cairn.store import agents, identities
from cairn.store.db import Database
from tests.integration.test_letta_import import IDS, ORG, fingerprint, letta_url

DANA = "identity-00000000-0000-4000-8000-00000000000a"
GONE = "identity-00000000-0000-4000-8000-00000000000b"
ODD = "identity-00000000-0000-4000-8000-00000000000c"


def test_identities_come_over_with_their_agents_and_blocks(db: Database, pg_dsn: str) -> None:
    restored = letta_url.__wrapped__(pg_dsn)  # type: ignore[attr-defined]
    copy = next(restored)
    with psycopg.connect(copy, autocommit=True) as conn:
        block = conn.execute(
            "SELECT b.id FROM block b JOIN blocks_agents ba ON ba.block_id = b.id "
            "WHERE ba.agent_id = %s AND b.label = 'human'",
            (IDS["A"],),
        ).fetchone()[0]
        properties = json.dumps([{"key": "plan", "value": "pro", "type": "string"}])
        for identity_id, key, kind, deleted in (
            (DANA, "dana@example.com", "user", False),
            (GONE, "gone", "user", True),
            (ODD, "odd", "robot", False),
        ):
            conn.execute(
                """INSERT INTO identities (id, identifier_key, name, identity_type,
                       organization_id, is_deleted, properties)
                   VALUES (%s, %s, %s, %s, %s, %s, %s)""",
                (identity_id, key, key.title(), kind, ORG, deleted, properties),
            )
        conn.execute("INSERT INTO identities_agents VALUES (%s, %s)", (DANA, IDS["A"]))
        conn.execute("INSERT INTO identities_blocks VALUES (%s, %s)", (DANA, block))
    before = fingerprint(copy)
    report = import_letta(db, copy)
    assert fingerprint(copy) == before
    assert report.imported["identities"] == 1
    assert any(s.startswith(f"identity {ODD}: identity_type") for s in report.skipped)
    with db.connection() as conn:
        dana = identities.get(conn, ORG, DANA)
        assert identities.get(conn, ORG, GONE) is None
        found = agents.list_agents(conn, ORG, AgentFilter(identifier_keys=["dana@example.com"]))
    assert dana is not None and dana.identifier_key == "dana@example.com"
    assert dana.agent_ids == [IDS["A"]] and dana.block_ids == [block]
    assert [(p.key, p.value) for p in dana.properties] == [("plan", "pro")]
    assert [a.id for a in found] == [IDS["A"]]
    again = import_letta(db, copy)
    assert again.imported["identities"] == 0 and again.already["identities"] == 1
    next(restored, None)
