"""The step bench's workload through the whole local stack: `python -m cairn.local` (what
`make dev` runs: embedded PostgreSQL, moto's SQS and Step Functions, the step workers, the
HTTP bridge) as its own process, driven over HTTP, the fake LLM answering at once.

Prints per-message latency (p50, p99) and the stack's CPU per message (its process and the
PostgreSQL processes it started, from /proc), with the machine's load average.

    .venv/bin/python bench/local_stack.py [-n 200] [--agents 10]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.llm_server import FakeLLM, Reply  # noqa: E402

LLM = {"model": "gpt-bench", "model_endpoint_type": "openai", "context_window": 128_000}
EMBEDDING = {"embedding_model": "cairn-hash", "embedding_endpoint_type": "hash",
             "embedding_dim": 384}  # fmt: skip
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(*roots: int) -> float:
    """User + system CPU of processes and all their descendants alive now (each once)."""
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
    return sum(times.get(pid, 0.0) for pid in seen)


def postmaster(data: str) -> int:
    """The embedded server's first process (pg_ctl leaves it to init, not to the stack)."""
    return int((Path(data) / "pgdata" / "postmaster.pid").read_text().split()[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_stack(data: str, port: int, fake: FakeLLM, log: IO[str]) -> subprocess.Popen[str]:
    """`python -m cairn.local` as `make dev` runs it, on `fake`, once it listens."""
    env = {**os.environ, "CAIRN_DATA_DIR": data, "CAIRN_PORT": str(port),
           "CAIRN_API_KEY": "sk-cairn-bench", "OPENAI_API_KEY": "k",
           "OPENAI_BASE_URL": f"{fake.base_url}/v1", "CAIRN_LLM_MAX_RETRIES": "0"}  # fmt: skip
    env.pop("DATABASE_URL", None)
    stack = subprocess.Popen([sys.executable, "-m", "cairn.local"], env=env, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=log, text=True)  # fmt: skip
    assert stack.stdout is not None
    for line in stack.stdout:
        if "listening on" in line:
            break
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
    args = parser.parse_args()
    port = free_port()
    with (
        tempfile.TemporaryDirectory() as data,
        FakeLLM() as fake,
        open(Path(data) / "stack.log", "w") as log,
    ):
        fake.when(lambda r: True, Reply(text="ok", usage=(1, 1)))
        stack = start_stack(data, port, fake, log)
        try:
            headers = {"Authorization": "Bearer sk-cairn-bench"}
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers,
                              timeout=60) as c:  # fmt: skip
                agents = [c.post("/v1/agents/", json={"llm_config": LLM,
                                                      "embedding_config": EMBEDDING}).json()["id"]
                          for _ in range(args.agents)]  # fmt: skip
                for _ in range(5):  # warm up
                    c.post(f"/v1/agents/{agents[0]}/messages", json={"input": "warm up"})
                time.sleep(2)  # the warm-up's queued embedding jobs
                roots = (stack.pid, postmaster(data))
                cpu_before, latencies = cpu_seconds(*roots), []
                for n in range(args.n):
                    started = time.perf_counter()
                    r = c.post(f"/v1/agents/{agents[n % len(agents)]}/messages",
                               json={"input": f"message {n}"})  # fmt: skip
                    latencies.append((time.perf_counter() - started) * 1000)
                    assert r.status_code == 200, r.text
                time.sleep(2)  # let the queued embedding jobs of the last messages run
                cpu = (cpu_seconds(*roots) - cpu_before) * 1000 / args.n
        finally:
            stop_stack(stack)
    ordered = sorted(latencies)
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"make dev's processes, {args.n} messages over {args.agents} agents (load {load})")
    print(f"latency per message: p50 {statistics.median(ordered):.1f} ms, "
          f"p99 {ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]:.1f} ms")  # fmt: skip
    print(
        f"CPU per message, the stack and its PostgreSQL: {cpu:.1f} ms "
        "(includes the 2 s of queued work after the last message)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
