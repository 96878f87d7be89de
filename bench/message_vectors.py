"""What a message's vector costs PostgreSQL: its write with an HNSW insert and without, and
the exact comparison that stands in for the index while an agent holds fewer than
store.messages.VECTOR_INDEX_FROM searchable messages (migration 0054).

On the real schema (every migration) in an embedded PostgreSQL, at 384 and 1,536
dimensions, with clustered vectors (bench/search.py's: a low-dimensional latent space, as
sentence embeddings have) and random unit vectors (an HNSW insert's hardest case). An index
already holding `--seed` vectors; two agents' messages embedded by the job's statement
(`messages.set_embeddings`) in batches of 50, one agent's into the index and the other's
not, the two interleaved. Then each agent's meaning half, 2,000 rows each: compared
exactly, or walked through the index. CPU is the PostgreSQL backend's scheduler time.

    .venv/bin/python bench/message_vectors.py [--seed 4000] [--rows 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cairn.domain import Agent, LLMConfig, Organization  # noqa: E402
from cairn.local.postgres import start_embedded  # noqa: E402
from cairn.store import Database, agents, messages, tenancy  # noqa: E402
from cairn.store.migrate import apply_migrations  # noqa: E402
from cairn.store.search import Ranking, hybrid_messages  # noqa: E402

BATCH = 50
MEANING = Ranking(lexical=False)


def vectors(rng: np.random.Generator, n: int, dim: int, kind: str) -> np.ndarray:
    if kind == "clustered":  # 24 latent dimensions projected, with a little noise
        projection = np.random.default_rng(11).normal(size=(24, dim))
        points = rng.normal(size=(n, 24)) @ projection + 0.5 * rng.normal(size=(n, dim))
    else:
        points = rng.normal(size=(n, dim))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def backend_ms(pid: int) -> float:
    """The backend's CPU so far (each thread's scheduler time)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e6


def load(db: Database, org_id: str, agent_id: str, n: int, embedded: np.ndarray | None) -> None:
    """`n` searchable messages of the agent, their vectors in the index if given."""
    columns = "id, organization_id, agent_id, role, content, search_text, created_at"
    if embedded is not None:
        columns += ", embedding, indexed"
    with db.connection() as conn, conn.cursor().copy(f"COPY messages ({columns}) FROM STDIN") as cp:
        for i in range(n):
            row = [f"message-{uuid.uuid4()}", org_id, agent_id, "user", "[]", f"note {i}"]
            row.append("2026-01-01T00:00:00Z")
            if embedded is not None:
                row += ["[" + ",".join(f"{x:.5f}" for x in embedded[i]) + "]", True]
            cp.write_row(row)


def run(db: Database, pid: int, org_id: str, dim: int, kind: str, args: argparse.Namespace) -> None:
    rng = np.random.default_rng(dim)
    with db.transaction() as conn:
        conn.execute("TRUNCATE messages CASCADE")  # each run's index holds its own vectors
        made = [
            agents.create(
                conn, Agent(organization_id=org_id, name=name, llm_config=LLMConfig(model="m"))
            )
            for name in ("seed", "indexed", "compared")
        ]
    seed, indexed, compared = (a.id for a in made)
    load(db, org_id, seed, args.seed, vectors(rng, args.seed, dim, kind))
    for agent_id in (indexed, compared):
        load(db, org_id, agent_id, args.rows, None)
    with db.connection() as conn:
        conn.execute("ANALYZE messages")
    cost: dict[str, list[float]] = {"into the index": [], "not indexed": []}
    for n in range(args.rows // BATCH):
        ways = [("into the index", indexed, 0), ("not indexed", compared, 10**9)]
        for way, agent_id, index_from in ways if n % 2 else ways[::-1]:
            with db.connection() as conn:
                found = messages.to_embed(conn, org_id, agent_id, BATCH)
                assert found is not None and len(found.texts) == BATCH
                batch = vectors(rng, BATCH, dim, kind).tolist()
                pairs = [(i, v) for (i, _), v in zip(found.texts, batch, strict=True)]
                before = backend_ms(pid)
                messages.set_embeddings(
                    conn, org_id, agent_id, "bench", pairs, index_from=index_from
                )
                cost[way].append((backend_ms(pid) - before) / BATCH)
    searches: dict[str, list[float]] = {"index": [], "exact": []}
    with db.connection() as conn:
        conn.execute("ANALYZE messages")
        for n, q in enumerate(vectors(rng, args.queries, dim, kind).tolist()):
            ways = [("index", indexed), ("exact", compared)]
            for way, agent_id in ways if n % 2 else ways[::-1]:
                before = backend_ms(pid)
                found = hybrid_messages(conn, org_id, agent_id, "", q, limit=10, ranking=MEANING)
                searches[way].append(backend_ms(pid) - before)
                assert len(found) == 10
    write = {k: statistics.median(v) for k, v in cost.items()}
    search = {k: statistics.median(v) for k, v in searches.items()}
    print(
        f"| {dim} | {kind} | {write['into the index']:.3f} | {write['not indexed']:.3f} |"
        f" {search['index']:.1f} | {search['exact']:.1f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=4000, help="vectors already in the index")
    parser.add_argument("--rows", type=int, default=2000, help="each agent's messages")
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dsn, server = start_embedded(Path(tmp) / "pgdata", cleanup="delete")
        apply_migrations(dsn)
        db = Database(dsn, max_size=1)  # one connection: one backend to read the CPU of
        with db.transaction() as conn:
            org = tenancy.create_organization(conn, Organization(name="bench"))
            pid = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        load_avg = ", ".join(f"{v:.2f}" for v in os.getloadavg())
        print(f"PostgreSQL's CPU, ms (load {load_avg}; index seeded with {args.seed} vectors)\n")
        print("| dims | vectors | write, into the index | write, not indexed |", end="")
        print(f" search by the index ({args.rows} rows) | search, exact ({args.rows} rows) |")
        print("| --- | --- | --- | --- | --- | --- |")
        started = time.perf_counter()
        for dim in (384, 1536):
            for kind in ("clustered", "random"):
                run(db, pid, org.id, dim, kind, args)
        print(f"\n{time.perf_counter() - started:.0f} s")
        db.close()
        server.cleanup()  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main())
