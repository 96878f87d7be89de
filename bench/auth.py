"""What checking an API key on every request costs: the lookup each request makes, timed
against the database (embedded PostgreSQL), beside the statement it replaced (an UPDATE of
`last_used_at` on every request, which a 60 s per-process cache used to spare), the lookup
before rate limits (migration 0037), and a key whose organization has a rate limit (the
lookup then counts the request: a write each time, in the same statement).

    .venv/bin/python bench/auth.py [-n 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cairn.domain import Organization, User  # noqa: E402
from cairn.domain.tenancy import hash_api_key  # noqa: E402
from cairn.local.postgres import start_embedded  # noqa: E402
from cairn.store import Database, limits, tenancy  # noqa: E402
from cairn.store.migrate import apply_migrations  # noqa: E402

OLD = """
UPDATE api_keys SET last_used_at = now()
WHERE key_hash = %(key_hash)s AND revoked_at IS NULL
RETURNING *
"""
# The lookup as it was before organizations' rate limits.
BEFORE_LIMITS = """
WITH found AS (
    SELECT * FROM api_keys WHERE key_hash = %(key_hash)s AND revoked_at IS NULL
), touched AS (
    UPDATE api_keys k SET last_used_at = now() FROM found
    WHERE k.id = found.id
      AND (found.last_used_at IS NULL OR found.last_used_at < now() - interval '1 minute')
)
SELECT * FROM found
"""


def timed(db: Database, n: int, call: object) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        with db.connection() as conn:
            call(conn)  # type: ignore[operator]
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dsn, server = start_embedded(Path(tmp) / "pgdata", cleanup="delete")
        apply_migrations(dsn)
        db = Database(dsn, max_size=1)
        db.open()
        with db.transaction() as conn:
            org = tenancy.create_organization(conn, Organization(name="bench"))
            user = tenancy.create_user(conn, User(organization_id=org.id, name="b"))
            for _ in range(1000):  # an index to look through, as a real deployment has
                tenancy.create_api_key(conn, org.id, user.id)
            _, key = tenancy.create_api_key(conn, org.id, user.id)
            limited = tenancy.create_organization(conn, Organization(name="limited"))
            other = tenancy.create_user(conn, User(organization_id=limited.id, name="c"))
            _, counted = tenancy.create_api_key(conn, limited.id, other.id)
            limits.put(conn, limited.id, {"requests_per_minute": 2**31 - 1})
        digest = hash_api_key(key)
        now = {
            "now": lambda c: tenancy.admit(c, key),
            "now, rate-limited org": lambda c: tenancy.admit(c, counted),
            "before limits": lambda c: c.execute(BEFORE_LIMITS, {"key_hash": digest}).fetchone(),
            "old": lambda c: c.execute(OLD, {"key_hash": digest}).fetchone(),
        }
        figures: dict[str, list[float]] = {name: [] for name in now}
        for _ in range(5):  # interleaved rounds
            for name, call in now.items():
                figures[name] += timed(db, args.n // 5, call)
        load = os.getloadavg()[0]
        print(f"API key lookups, {args.n} each, interleaved; load {load:.1f}")
        for name, values in figures.items():
            values.sort()
            p99 = values[int(len(values) * 0.99)]
            print(f"  {name}: p50 {statistics.median(values):.3f} ms, p99 {p99:.3f} ms")
        db.close()
        server.cleanup()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
