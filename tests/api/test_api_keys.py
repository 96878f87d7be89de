"""API keys as an operator relies on them: revoked or rotated keys stop at once, in every
process, and nothing of a key but its hash and a short prefix is stored."""

from __future__ import annotations

from pathlib import Path

import httpx

from cairn.services import tenants
from cairn.store import tenancy
from cairn.store.db import Database
from tests.api.conftest import Stack

MIGRATIONS = Path(__file__).parents[2] / "layers/runtime/python/cairn/store/migrations"


def agents(stack: Stack, key: str) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.get(f"{stack.url}/v1/agents/", headers=headers, timeout=30).status_code


def test_a_revoked_key_answers_401_on_the_very_next_request(stack: Stack) -> None:
    extra = tenants.create_key(stack.runtime.db, stack.org_id, "ci")
    assert agents(stack, extra["api_key"]) == 200
    # Revoked through the database as another process (the migrate function, cairn-admin)
    # would: the API process has just seen the key work.
    tenants.revoke_key(stack.runtime.db, stack.org_id, extra["key_id"])
    assert agents(stack, extra["api_key"]) == 401
    assert agents(stack, stack.key) == 200


def test_a_rotated_key_stops_as_its_successor_starts(stack: Stack) -> None:
    extra = tenants.create_key(stack.runtime.db, stack.org_id, "ci")
    assert agents(stack, extra["api_key"]) == 200
    rotated = tenants.rotate_key(stack.runtime.db, stack.org_id, extra["key_id"])
    assert agents(stack, extra["api_key"]) == 401
    assert agents(stack, rotated["api_key"]) == 200


def test_a_busy_key_writes_its_last_use_once_a_minute_not_per_request(stack: Stack) -> None:
    for _ in range(3):
        assert agents(stack, stack.key) == 200
    with stack.runtime.db.connection() as conn:
        row = conn.execute(
            "SELECT last_used_at, xmin::text::bigint AS xmin FROM api_keys "
            "WHERE organization_id = %(org)s",
            {"org": stack.org_id},
        ).fetchone()
    assert row is not None and row["last_used_at"] is not None
    assert agents(stack, stack.key) == 200
    with stack.runtime.db.connection() as conn:
        again = conn.execute(
            "SELECT xmin::text::bigint AS xmin FROM api_keys WHERE organization_id = %(org)s",
            {"org": stack.org_id},
        ).fetchone()
    assert again is not None and again["xmin"] == row["xmin"]  # the row was not rewritten


def test_only_a_hash_and_a_short_prefix_are_stored_whatever_the_length(stack: Stack) -> None:
    db = stack.runtime.db
    with db.transaction() as conn:
        user = tenancy.first_user(conn, stack.org_id)
        assert user is not None
        made = [
            tenancy.create_api_key(conn, stack.org_id, user.id, key=k)[1]
            # Letters no id holds: "abcd" was found once inside a random UUID (apikey-ce6abcdf-...).
            for k in ("short-key-12", "wxyz", "x" * 200)
        ]
        made.append(tenancy.create_api_key(conn, stack.org_id, user.id)[1])
    with db.connection() as conn:
        stored = conn.execute("SELECT * FROM api_keys").fetchall()
    for key in made:
        assert agents(stack, key) == 200
        for row in stored:
            for column, value in row.items():
                if isinstance(value, str) and column != "key_hash":
                    assert key not in value, column
                    if value and column == "key_prefix":
                        assert len(value) <= max(4, len(key) // 4) or value.startswith("sk-cairn-")
    prefixes = {r["key_prefix"] for r in stored}
    assert {"sho", "w", "xxxx"} <= prefixes


def test_the_migration_cuts_stored_prefixes_of_older_keys(db: Database, stack: Stack) -> None:
    with db.transaction() as conn:
        user = tenancy.first_user(conn, stack.org_id)
        assert user is not None
        for n, prefix in enumerate(("sk-cairn-abc", "hand-made-12", "tiny1234")):
            conn.execute(
                "INSERT INTO api_keys (id, organization_id, user_id, key_hash, key_prefix) "
                "VALUES (%s, %s, %s, %s, %s)",
                (f"apikey-old{n}", stack.org_id, user.id, f"{n:064x}", prefix),
            )
        conn.execute((MIGRATIONS / "0016_key_prefixes.sql").read_text())
        rows = conn.execute("SELECT id, key_prefix FROM api_keys WHERE id LIKE 'apikey-old%%'")
        kept = {r["id"]: r["key_prefix"] for r in rows}
    assert kept == {"apikey-old0": "sk-cairn-abc", "apikey-old1": "han", "apikey-old2": "ti"}
