"""Step overhead: N messages through the local stack, the fake LLM answering at once.

Prints per-message latency (p50, p99), SQL statements per step and per message, and LLM
calls per message. The API runs behind the same HTTP bridge as `make dev`; steps run on the
in-process queue. Statements are counted on every connection the process opens.

    .venv/bin/python bench/step_overhead.py [-n 200] [--tool-step] [--agents 10] [--runs 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.llm_server import FakeLLM, Reply  # noqa: E402
from tests.fakes.round_trips import RoundTrips  # noqa: E402

from cairn.adapters.local import lambdas  # noqa: E402
from cairn.assembly.build import build_runtime, use_runtime  # noqa: E402
from cairn.config import Settings  # noqa: E402
from cairn.domain import Organization, User  # noqa: E402
from cairn.local.http import make_server  # noqa: E402
from cairn.local.postgres import start_embedded  # noqa: E402
from cairn.run.driving import lifecycle  # noqa: E402
from cairn.store import Database, runs, tenancy  # noqa: E402
from cairn.store import steps as step_rows  # noqa: E402
from cairn.store.migrate import apply_migrations  # noqa: E402

LLM = {"model": "gpt-bench", "model_endpoint_type": "openai", "context_window": 128_000}
# Message embeddings are queued work that runs in its own invocation on AWS; here it would
# share the process (and the GIL) with the API, so the bench uses the instant hash embedder.
EMBEDDING = {
    "embedding_model": "cairn-hash",
    "embedding_endpoint_type": "hash",
    "embedding_dim": 384,
}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def engine_steps(rt, org_id, agent_id, counter, n=50):  # type: ignore[no-untyped-def]
    """Engine.step alone (claim, journal for tool steps, checkpoint): round trips, wall time
    and SQL time of each step."""
    from cairn.domain import Message, TextContent

    trips, walls, sqls = [], [], []
    for i in range(n):
        msg = Message(
            organization_id=org_id,
            agent_id=agent_id,
            role="user",
            content=[TextContent(text=f"engine {i}")],
        )
        run, _, *_ = lifecycle.start_run(rt.db, org_id, agent_id, [msg])
        index = 0
        while True:
            mark, waited, started = counter.round_trips, counter.wait_seconds, time.perf_counter()
            outcome = rt.engine.step(org_id, run.id, index)
            walls.append((time.perf_counter() - started) * 1000)
            sqls.append((counter.wait_seconds - waited) * 1000)
            trips.append(counter.round_trips - mark)
            if outcome.next_command is None:
                break
            index += 1
    return statistics.mean(trips), walls, sqls


def bulk_load(db, org_id, agent_ids, passages, history):  # type: ignore[no-untyped-def]
    """An archive of `passages` and a history of `history` messages per agent, as a long-lived
    agent has them (not in the context window: what a step must not pay for)."""
    from cairn.domain import Archive
    from cairn.store import archives

    with db.transaction() as conn:
        for agent_id in agent_ids:
            if passages:
                archive = archives.create_archive(conn, Archive(organization_id=org_id, name="b"))
                archives.attach_archive(conn, org_id, archive.id, agent_id)
                conn.execute(
                    "INSERT INTO passages (id, organization_id, archive_id, text, content_hash,"
                    " tags) SELECT %(a)s || '-' || i, %(org)s, %(a)s, 'fact ' || i, md5(i::text),"
                    " ARRAY['tag' || (i %% 40)] FROM generate_series(1, %(n)s) i",
                    {"a": archive.id, "org": org_id, "n": passages},
                )
            if history:
                conn.execute(
                    "INSERT INTO messages (id, organization_id, agent_id, role, content)"
                    " SELECT %(agent)s || '-old-' || i, %(org)s, %(agent)s, 'user',"
                    " jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'old ' || i))"
                    " FROM generate_series(1, %(n)s) i",
                    {"agent": agent_id, "org": org_id, "n": history},
                )
    with db.connection() as conn:
        conn.execute("ANALYZE")
        loaded = conn.execute(
            "SELECT (SELECT count(*) FROM passages) AS p, (SELECT count(*) FROM messages) AS m"
        ).fetchone()
    print(f"loaded: {loaded['p']} passages, {loaded['m']} messages")  # type: ignore[index]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=200, help="messages to send")
    parser.add_argument("--tool-step", action="store_true", help="each turn: a tool, then text")
    parser.add_argument(
        "--agents",
        type=int,
        default=10,
        help="messages go round-robin to this many agents (context stays small)",
    )
    parser.add_argument(
        "--runs", type=int, default=1, help="fresh databases in a row; medians at the end"
    )
    parser.add_argument("--passages", type=int, default=0, help="archival passages per agent")
    parser.add_argument("--history", type=int, default=0, help="past messages per agent")
    args = parser.parse_args()
    results = []
    for i in range(args.runs):
        if args.runs > 1:
            print(f"-- run {i + 1} of {args.runs}")
        results.append(run_once(args))
    if args.runs > 1:
        p50s = sorted(r[0] for r in results)
        print(
            f"median of {args.runs} runs: p50 {statistics.median(p50s):.1f} ms "
            f"(runs {p50s[0]:.1f}-{p50s[-1]:.1f}), "
            f"p99 {statistics.median(r[1] for r in results):.1f} ms, "
            f"CPU {statistics.median(r[2] for r in results):.1f} ms per message"
        )
    return 0


def run_once(args: argparse.Namespace) -> tuple[float, float, float]:
    """One fresh stack, the messages, the report; returns (p50, p99, CPU) per message."""
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as fake:
        dsn, server = start_embedded(Path(tmp) / "pgdata", cleanup="delete")
        apply_migrations(dsn)
        db = Database(dsn, max_size=4)
        settings = Settings(
            openai_api_key="k", openai_base_url=f"{fake.base_url}/v1", llm_max_retries=0
        )
        rt = build_runtime(settings, db=db, yielding=lambdas.released)
        use_runtime(rt)
        with db.transaction() as conn:
            org = tenancy.create_organization(conn, Organization(name="bench"))
            user = tenancy.create_user(conn, User(organization_id=org.id, name="bench"))
            _, key = tenancy.create_api_key(conn, org.id, user.id, name="bench")
        if args.tool_step:
            fake.when(
                lambda r: r.body["messages"][-1]["role"] == "user",
                Reply(tool_calls=[("conversation_search", {"query": "q"})], usage=(1, 1)),
            )
        fake.when(lambda r: True, Reply(text="ok", usage=(1, 1)))
        http = make_server("127.0.0.1", 0)
        threading.Thread(target=http.serve_forever, daemon=True).start()
        host, port = http.server_address[:2]
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=f"http://{host!s}:{port}", headers=headers, timeout=30) as c:
            agent_ids = [
                c.post(
                    "/v1/agents/", json={"llm_config": LLM, "embedding_config": EMBEDDING}
                ).json()["id"]
                for _ in range(args.agents)
            ]
            agent = {"id": agent_ids[0]}
            bulk_load(db, org.id, agent_ids, args.passages, args.history)
            for _ in range(5):  # warm up: imports, pools, caches
                c.post(f"/v1/agents/{agent['id']}/messages", json={"input": "warm up"})
            counter = RoundTrips().install()
            calls_before = len(fake.requests)
            latencies = []
            cpu_started = time.process_time()
            for n in range(args.n):
                started = time.perf_counter()
                target = agent_ids[n % len(agent_ids)]
                r = c.post(f"/v1/agents/{target}/messages", json={"input": f"message {n}"})
                latencies.append((time.perf_counter() - started) * 1000)
                assert r.status_code == 200, r.text
            statements, trips = counter.statements, counter.round_trips
            cpu_ms = (time.process_time() - cpu_started) * 1000 / args.n
        with db.connection() as conn:
            steps = sum(
                len(step_rows.list_steps(conn, org.id, r.id, limit=1000))
                for a in agent_ids
                for r in runs.list_runs(conn, org.id, agent_ids=[a], limit=10_000)
            )
        steps_measured = steps - 5 * (2 if args.tool_step else 1)
        llm_calls = len(fake.requests) - calls_before
        step_trips, step_walls, step_sqls = engine_steps(rt, org.id, agent["id"], counter)
        counter.uninstall()
        print(
            f"messages: {args.n} over {args.agents} agents  steps: {steps_measured}  "
            f"({'tool + text' if args.tool_step else 'text'} turns)  "
            f"archive {args.passages} passages, history {args.history} messages per agent"
        )
        p50, p99 = statistics.median(latencies), percentile(latencies, 0.99)
        print(f"latency per message: p50 {p50:.1f} ms, p99 {p99:.1f} ms")
        print(
            f"SQL per message (API, auth, run, steps, reply): {statements / args.n:.1f} "
            f"statements, {trips / args.n:.1f} round trips"
        )
        # Steadier than wall time on a shared machine; Postgres's own CPU is not in it.
        print(f"CPU per message in this process (client, API, queue, fake LLM): {cpu_ms:.1f} ms")
        print(
            f"Engine.step alone: p50 {statistics.median(step_walls):.1f} ms, "
            f"p99 {percentile(step_walls, 0.99):.1f} ms, SQL {statistics.median(step_sqls):.1f} ms"
            f" (p50), {step_trips:.1f} round trips"
        )
        print(f"LLM calls per message: {llm_calls / args.n:.2f}")
        http.shutdown()
        use_runtime(None)
        db.close()
        server.cleanup()  # type: ignore[attr-defined]
    return p50, p99, cpu_ms


if __name__ == "__main__":
    sys.exit(main())
