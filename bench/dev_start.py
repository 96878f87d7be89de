"""`make dev` from a fresh data directory: how long until the API answers, what the whole
process tree holds then, and what it burns while idle.

Runs what `make dev` runs after the install: the workflow build step (a no-op once built),
then `python -m cairn.local` on an empty data directory (a new embedded PostgreSQL cluster,
migrations, the local tenant). Prints the seconds to a healthy `/v1/health`, the tree's
memory (RSS summed, and PSS, which counts PostgreSQL's shared memory once), whether any
Node.js process lives in it, and its CPU per second of idling, with the machine's load.

    .venv/bin/python bench/dev_start.py [--idle 30]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_stack import cpu_seconds, free_port  # noqa: E402


def tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def memory_kb(pids: list[int], field: str) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith(field + ":"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle", type=float, default=30, help="seconds of idling measured")
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        env = {**os.environ, "CAIRN_DATA_DIR": data, "CAIRN_PORT": str(port)}
        env.pop("DATABASE_URL", None)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "cairn.adapters.local.stepfunctions"],
            env=env,
            cwd=ROOT,
            check=True,
        )
        built = time.perf_counter() - started
        # Its own session, so the embedded server it starts is in its tree and stops with it.
        stack = subprocess.Popen(
            [sys.executable, "-m", "cairn.local"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/v1/health/", timeout=1).is_success:
                        break
                except httpx.HTTPError:
                    pass
                assert stack.poll() is None, "the stack exited"
                assert time.perf_counter() - started < 300, "no healthy API in 300 s"
                time.sleep(0.05)
            healthy = time.perf_counter() - started
            time.sleep(5)  # what the start left behind settles
            postmaster = int((Path(data) / "pgdata" / "postmaster.pid").read_text().split()[0])
            pids = tree(stack.pid) + tree(postmaster)
            rss, pss = memory_kb(pids, "Rss"), memory_kb(pids, "Pss")
            node = [pid for pid in pids if "node" in command(pid).split(" ")[0]]
            before = cpu_seconds(stack.pid, postmaster)
            time.sleep(args.idle)
            idle = (cpu_seconds(stack.pid, postmaster) - before) * 1000 / args.idle
        finally:
            os.killpg(stack.pid, signal.SIGTERM)
            stack.wait(timeout=60)
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"make dev on a fresh data directory (load {load})")
    print(f"healthy after {healthy:.1f} s (the workflow build step: {built:.1f} s of it)")
    print(
        f"process tree: {len(pids)} processes, RSS {rss / 1024:.0f} MB summed, "
        f"PSS {pss / 1024:.0f} MB; Node.js processes: {len(node)}"
    )
    print(f"idle CPU, the stack and its PostgreSQL: {idle:.1f} ms per second")
    return 0


if __name__ == "__main__":
    sys.exit(main())
