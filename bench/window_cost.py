"""A message's CPU as the agent's context window grows: agents at different lengths of
conversation on one `make dev` stack (the fake model answering at once), batches of 10 sent
to each in turn, forwards and backwards, so a drift of the machine falls on all alike.
The fresh agent (length 0) is made again every 4 rounds, so it stays young; the others
keep growing by 10 a round. CPU is the stack's and its PostgreSQL's scheduler time, apart,
medians of the rounds.

    .venv/bin/python bench/window_cost.py [--lengths 0,200] [--rounds 16]
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
    cpu_seconds,
    free_port,
    postmaster,
    start_database,
    start_stack,
    stop_stack,
)
from bench.versus_letta import agent_body, send  # noqa: E402
from tests.fakes.llm_server import FakeLLM, Reply  # noqa: E402

BATCH = 10


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="0,200", help="messages each agent starts with")
    parser.add_argument("--rounds", type=int, default=16)
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
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

                def new_agent(length: int) -> str:
                    agent = client.post("/v1/agents/", json=agent_body(fake)).json()["id"]
                    send(client, agent, length + 3)
                    return str(agent)

                agents = {length: new_agent(length) for length in lengths}
                roots = (stack.pid, postmaster(data))
                spent: dict[int, list[tuple[float, float]]] = {length: [] for length in lengths}
                for round_ in range(args.rounds):
                    for length in lengths if round_ % 2 == 0 else lengths[::-1]:
                        time.sleep(0.5)  # each batch after the same pause (bench/idle_gap.py)
                        before = [cpu_seconds(root, precise=True) for root in roots]
                        send(client, agents[length], BATCH)
                        time.sleep(0.3)  # the batch's queued work
                        after = [cpu_seconds(root, precise=True) for root in roots]
                        stack_ms, pg_ms = (
                            (a - b) * 1000 / BATCH for a, b in zip(after, before, strict=True)
                        )
                        spent[length].append((stack_ms, pg_ms))
                        if length == 0 and round_ % 4 == 3:
                            agents[0] = new_agent(0)
        finally:
            stop_stack(stack)
            database.cleanup()
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"{args.rounds} rounds of {BATCH} messages to each agent (load {load})\n")
    print("| agent's history | stack CPU a message | PostgreSQL CPU a message |")
    print("| --- | --- | --- |")
    for length, rows in spent.items():
        stack_ms = statistics.median(s for s, _ in rows)
        pg_ms = statistics.median(p for _, p in rows)
        print(f"| {length}+ messages | {stack_ms:.2f} ms | {pg_ms:.2f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
