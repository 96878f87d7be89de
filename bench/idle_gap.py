"""A message's CPU after the stack sat idle: the same message, sent right after the last
one or after a pause of 10 ms to 1 s, through `make dev`'s own processes (the fake model
answering at once; the agent without message embeddings, so no job lands in a window).

Each measured message follows two warm-up messages and its pause; the pauses are taken in
turn, forwards and backwards, so a drift of the machine falls on all alike. CPU is the
stack's and its PostgreSQL's scheduler time. What it shows: the machine, not the code,
charges the first message after a pause (a core's clock and caches coming back), so a
benchmark sending in short batches charges that to its server once a batch.

    .venv/bin/python bench/idle_gap.py [--rounds 12]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_stack import (  # noqa: E402
    free_port,
    postmaster,
    start_database,
    start_stack,
    stop_stack,
)
from bench.versus_letta import agent_body, send  # noqa: E402
from tests.fakes.llm_server import FakeLLM, Reply  # noqa: E402

PAUSES = (0.0, 0.01, 0.05, 0.2, 1.0)


def processes(*roots: int) -> list[int]:
    """The roots and their descendants, found once: walking /proc around each message
    (as `local_stack.cpu_seconds` does) would itself be a pause of a few ms."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            parent = int(Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[1])
        except OSError:
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def cpu_ms(pids: list[int]) -> float:
    """Their threads' scheduler time so far."""
    total = 0
    for pid in pids:
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
        except OSError:
            pass  # ended meanwhile
    return total / 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    port = free_port()
    with (
        tempfile.TemporaryDirectory() as data,
        FakeLLM() as fake,
        open(Path(data) / "stack.log", "w") as log,
    ):
        fake.when(lambda r: True, lambda r: Reply(text="ok", usage=(1, 1)))
        dsn, database = start_database(data, counting=False)
        stack = start_stack(data, dsn, port, fake, log)
        try:
            with httpx.Client(
                base_url=f"http://127.0.0.1:{port}",
                headers={"Authorization": "Bearer sk-cairn-bench"},
                timeout=120,
            ) as client:
                body = agent_body(fake)
                body["metadata"] = {"cairn_message_embeddings": False}
                agent = client.post("/v1/agents/", json=body).json()["id"]
                send(client, agent, 5)
                pids = processes(stack.pid, postmaster(data))
                cpu: dict[float, list[float]] = {p: [] for p in PAUSES}
                for n in range(args.rounds):
                    for pause in PAUSES if n % 2 else PAUSES[::-1]:
                        send(client, agent, 2)
                        time.sleep(pause)
                        before = cpu_ms(pids)
                        send(client, agent, 1)
                        cpu[pause].append(cpu_ms(pids) - before)
        finally:
            stop_stack(stack)
            database.cleanup()
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"{args.rounds} rounds (load {load})\n")
    print("| pause before the message | CPU, the stack and its PostgreSQL (median) |")
    print("| --- | --- |")
    for pause, values in cpu.items():
        print(f"| {pause * 1000:.0f} ms | {statistics.median(values):.2f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
