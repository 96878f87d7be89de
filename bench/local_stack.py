"""The step bench's workload through the whole local stack: `python -m cairn.local` (what
`make dev` runs: embedded PostgreSQL, moto's SQS and Step Functions, the step workers, the
HTTP bridge) as its own process, driven over HTTP, the fake LLM answering at once.

Prints per-message latency (p50, p99) and the stack's CPU per message (its process and the
PostgreSQL processes it started, from /proc), with the machine's load average.

    .venv/bin/python bench/local_stack.py [-n 200] [--agents 10] [--clients 4]
"""

from __future__ import annotations

import argparse
import itertools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.llm_server import FakeLLM, Recorded, Reply  # noqa: E402

LLM = {"model": "gpt-bench", "model_endpoint_type": "openai", "context_window": 128_000}
EMBEDDING = {
    "embedding_model": "cairn-hash",
    "embedding_endpoint_type": "hash",
    "embedding_dim": 384,
}
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(*roots: int, precise: bool = False) -> float:
    """User + system CPU of processes and all their descendants alive now (each once).
    /proc's ticks (10 ms) by default; `precise`: each thread's scheduler time, to the
    nanosecond, for spans of a few ms."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        pid, parent = int(entry), int(fields[1])
        children.setdefault(parent, []).append(pid)
        times[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo.extend(children.get(pid, []))
    if precise:
        return sum(_scheduled(pid) for pid in seen)
    return sum(times.get(pid, 0.0) for pid in seen)


def _scheduled(pid: int) -> float:
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
    except OSError:
        pass  # a process (or thread) that ended meanwhile
    return total / 1e9


def postmaster(data: str) -> int:
    """The embedded server's first process (pg_ctl leaves it to init, not to the stack)."""
    return int((Path(data) / "pgdata" / "postmaster.pid").read_text().split()[0])


IDLE_WINDOW = 10.0  # the sweeper's period locally: each window holds one sweep


def idling(roots: tuple[int, int], seconds: float) -> list[float]:
    """CPU a second of the stack and its PostgreSQL while nobody calls, in windows, after a
    pause for the last messages' queued work. The statements counter is left alone (its
    own reads would count as work)."""
    time.sleep(5)
    windows = []
    for _ in range(max(1, round(seconds / IDLE_WINDOW))):
        before, started = cpu_seconds(*roots), time.perf_counter()
        time.sleep(IDLE_WINDOW)
        windows.append((cpu_seconds(*roots) - before) * 1000 / (time.perf_counter() - started))
    return windows


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_database(data: str, *, counting: bool = True) -> tuple[str, Any]:
    """The embedded server `make dev` starts, in `data`; `counting`: with every statement
    it runs counted (pg_stat_statements, nested ones too: the foreign-key checks of each row
    written), which costs PostgreSQL a few per cent more CPU than `make dev`'s server."""
    from cairn.local.postgres import start_embedded

    dsn, handle = start_embedded(Path(data) / "pgdata", cleanup="stop")
    if not counting:
        return dsn, handle
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
    handle.cleanup()
    dsn, handle = start_embedded(Path(data) / "pgdata", cleanup="stop")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    return dsn, handle


def statements(dsn: str) -> tuple[int, int]:
    """(statements the clients sent, statements those ran inside: foreign-key checks...)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(calls) FILTER (WHERE toplevel), 0),"
            " coalesce(sum(calls) FILTER (WHERE NOT toplevel), 0) FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def floor(
    fake: FakeLLM, dsn: str, *, body: dict[str, Any], n: int, raw: bool = False
) -> list[float]:
    """What no server can go below: the model's round trip through its SDK (the same fake,
    the last request a turn sent) and one durable commit (fsync'd, as the stack's are).

    The SDK's typed `create`, as issue 65 defines the floor and as Letta calls it; it walks
    the body to transform it before sending, 1-7 ms for a turn's request. With `raw`, the
    SDK's request method given the body's JSON bytes, as the stack calls it: the lower
    floor, of the call alone."""
    import openai
    from pydantic_core import to_json

    client = openai.OpenAI(base_url=f"{fake.base_url}/v1", api_key="k", max_retries=0)
    content = to_json(body) if raw else b""
    times = []
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_floor (n int)")
        conn.commit()
        for i in range(n):
            started = time.perf_counter()
            if raw:
                client.post("/chat/completions", content=content, cast_to=object)
            else:
                client.chat.completions.create(**body)
            conn.execute("INSERT INTO bench_floor VALUES (%s)", (i,))
            conn.commit()
            times.append((time.perf_counter() - started) * 1000)
    return times


def start_stack(
    data: str, dsn: str, port: int, fake: FakeLLM, log: IO[str]
) -> subprocess.Popen[str]:
    """`python -m cairn.local` as `make dev` runs it, on `fake`, once it listens."""
    env = {
        **os.environ,
        "CAIRN_DATA_DIR": data,
        "CAIRN_PORT": str(port),
        "CAIRN_API_KEY": "sk-cairn-bench",
        "OPENAI_API_KEY": "k",
        "DATABASE_URL": dsn,
        "OPENAI_BASE_URL": f"{fake.base_url}/v1",
        "CAIRN_LLM_MAX_RETRIES": "0",
    }
    stack = subprocess.Popen(
        [sys.executable, "-m", "cairn.local"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    assert stack.stdout is not None
    for line in stack.stdout:
        if "listening on" in line:
            break
    # Read on what it prints (the step function logs each step): a full pipe would stall it.
    threading.Thread(target=log.writelines, args=(stack.stdout,), daemon=True).start()
    return stack


def stop_stack(stack: subprocess.Popen[str]) -> None:
    stack.terminate()
    try:
        stack.wait(timeout=30)
    except subprocess.TimeoutExpired:
        stack.kill()  # its embedded server is stopped with the temporary folder
        stack.wait()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=200, help="messages to send")
    parser.add_argument("--agents", type=int, default=10, help="round-robin over this many")
    parser.add_argument("--sql", action="store_true", help="list the statements run most")
    parser.add_argument(
        "--idle", type=float, default=0, help="then seconds of idling measured (CPU a second)"
    )
    parser.add_argument(
        "--clients", type=int, default=1, help="clients sending at once (each waits for its answer)"
    )
    args = parser.parse_args()
    port = free_port()
    arrivals: list[tuple[float, int]] = []  # (when, user messages in its context) per request

    bodies: list[dict[str, Any]] = []  # every request the turns sent, in order

    def answer(recorded: Recorded) -> Reply:
        users = sum(m.get("role") == "user" for m in recorded.body.get("messages", []))
        arrivals.append((time.perf_counter(), users))
        bodies.append(recorded.body)
        return Reply(text="ok", usage=(1, 1))

    with (
        tempfile.TemporaryDirectory() as data,
        FakeLLM() as fake,
        open(os.environ.get("BENCH_STACK_LOG") or Path(data) / "stack.log", "w") as log,
    ):
        fake.when(lambda r: True, answer)
        dsn, database = start_database(data)
        stack = start_stack(data, dsn, port, fake, log)
        try:
            headers = {"Authorization": "Bearer sk-cairn-bench"}
            with httpx.Client(
                base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60
            ) as c:
                agents = [
                    c.post(
                        "/v1/agents/", json={"llm_config": LLM, "embedding_config": EMBEDDING}
                    ).json()["id"]
                    for _ in range(args.agents)
                ]
                for agent in agents:  # warm up
                    c.post(f"/v1/agents/{agent}/messages", json={"input": "warm up"})
                time.sleep(2)  # the warm-up's queued embedding jobs
                arrivals.clear()
                roots = (stack.pid, postmaster(data))
                sql_before = statements(dsn)
                cpu_before, latencies = cpu_seconds(*roots), []
                started_all = time.perf_counter()

                def client(k: int) -> None:
                    with httpx.Client(
                        base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60
                    ) as mine:
                        for n in range(k, args.n, args.clients):
                            started = time.perf_counter()
                            r = mine.post(
                                f"/v1/agents/{agents[n % len(agents)]}/messages",
                                json={"input": f"message {n}"},
                            )
                            latencies.append((time.perf_counter() - started) * 1000)
                            assert r.status_code == 200, r.text

                threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                wall = time.perf_counter() - started_all
                time.sleep(2)  # let the queued embedding jobs of the last messages run
                cpu = (cpu_seconds(*roots) - cpu_before) * 1000 / args.n
                top, nested = (
                    after - before
                    for after, before in zip(statements(dsn), sql_before, strict=True)
                )
                turns = list(arrivals)
                middle = bodies[len(bodies) - args.n + args.n // 2]  # the measured turns' median
                floors = floor(fake, dsn, body=middle, n=min(args.n, 100))
                if args.sql:
                    with psycopg.connect(dsn, autocommit=True) as conn:
                        for calls, toplevel, query in conn.execute(
                            "SELECT calls, toplevel, query FROM pg_stat_statements"
                            " ORDER BY calls DESC LIMIT 25"
                        ):
                            print(f"{calls:6d} {'top ' if toplevel else 'in  '} {query[:150]!r}")
                        for table, ins, upd in conn.execute(
                            "SELECT relname, n_tup_ins, n_tup_upd FROM pg_stat_user_tables"
                            " WHERE n_tup_ins + n_tup_upd > 0 ORDER BY 2 + 3 DESC"
                        ):
                            print(f"{table:24s} inserted {ins:6d} updated {upd:6d}")
                idle = idling(roots, args.idle) if args.idle else []
        finally:
            stop_stack(stack)
            database.cleanup()
    ordered = sorted(latencies)
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(
        f"make dev's processes, {args.n} messages over {args.agents} agents from "
        f"{args.clients} clients at once (load {load})"
    )
    print(
        f"latency per message: p50 {statistics.median(ordered):.1f} ms, "
        f"p99 {ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]:.1f} ms"
    )
    print(f"throughput: {args.n / wall:.1f} messages/s")
    p50 = statistics.median(ordered)
    print(
        f"the floor (one SDK call to the same fake model with the median turn's request, then "
        f"one fsync'd commit): p50 {statistics.median(floors):.1f} ms; a message's p50 is "
        f"{p50 / statistics.median(floors):.2f}x it"
    )
    arrivals = turns
    if args.agents == 1 and len(arrivals) > 1:
        # One agent: its turns run one after another, so the gap between two model calls is
        # the previous turn's checkpoint and the next one's start (the fake answers at once).
        gaps = sorted((b[0] - a[0]) * 1000 for a, b in itertools.pairwise(arrivals))
        print(
            f"model call to the next turn's model call: p50 {statistics.median(gaps):.1f} ms, "
            f"p99 {gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))]:.1f} ms"
        )
        grows = all(b[1] == a[1] + 1 for a, b in itertools.pairwise(arrivals))
        print(f"every model request carries the whole conversation: {'yes' if grows else 'NO'}")
    print(
        f"SQL per message (every process, the embedding jobs too): {top / args.n:.1f} "
        f"statements, and {nested / args.n:.1f} inside them (key checks, triggers)"
    )
    print(
        f"CPU per message, the stack and its PostgreSQL: {cpu:.1f} ms "
        "(includes the 2 s of queued work after the last message)"
    )
    if idle:
        each = ", ".join(f"{v:.1f}" for v in idle)
        print(
            f"idle after them, the stack and its PostgreSQL: {statistics.mean(idle):.1f} ms of "
            f"CPU a second (windows of {IDLE_WINDOW:.0f} s: {each})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
