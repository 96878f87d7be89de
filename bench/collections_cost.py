"""What the cyclic garbage collector costs a message, at CPython's default young threshold
and at others (cairn/heap.py, YOUNG_THRESHOLD).

The API in this process (the tests' stack: Powertools app, runtime, pool) on embedded
PostgreSQL, one `letta_v1_agent` on the fake OpenAI model; for each threshold in turn, in
interleaved rounds, `--batch` messages with the collector's own callbacks timing every
collection on the thread that ran it. Prints collections and their CPU per message.

    .venv/bin/python bench/collections_cost.py [--rounds 5] [--batch 60]
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.versus_letta import agent_body, send  # noqa: E402
from tests.api.conftest import make_stack  # noqa: E402
from tests.fakes.llm_server import Reply  # noqa: E402

from cairn.local.postgres import start_embedded  # noqa: E402
from cairn.store.db import Database  # noqa: E402
from cairn.store.migrate import apply_migrations  # noqa: E402

THRESHOLDS = (700, 2_000, 5_000, 20_000)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=60)
    args = parser.parse_args()
    spent: dict[int, float] = collections.Counter()
    runs: dict[int, int] = collections.Counter()
    started: dict[int, float] = {}
    current = [0]

    def timed(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.thread_time()
        else:
            spent[current[0]] += time.thread_time() - started[0]
            runs[current[0]] += 1

    older = gc.get_threshold()[1:]
    with tempfile.TemporaryDirectory() as tmp:
        dsn, server = start_embedded(Path(tmp) / "pg", cleanup="delete")
        apply_migrations(dsn)
        db = Database(dsn, max_size=4)
        with make_stack(db) as stack:
            stack.fake.when(lambda r: True, lambda r: Reply(text="ok", usage=(1, 1)))
            auth = {"Authorization": f"Bearer {stack.key}"}
            with httpx.Client(base_url=stack.url, headers=auth, timeout=60) as client:
                agents = {}
                for young in THRESHOLDS:
                    made = client.post("/v1/agents/", json=agent_body(stack.fake))
                    agents[young] = made.json()["id"]
                    send(client, agents[young], 5)  # warm
                gc.callbacks.append(timed)
                try:
                    for _ in range(args.rounds):
                        for young in THRESHOLDS:
                            gc.set_threshold(young, *older)
                            current[0] = young
                            send(client, agents[young], args.batch)
                finally:
                    gc.callbacks.remove(timed)
        db.close()
        server.cleanup()  # type: ignore[attr-defined]
    n = args.rounds * args.batch
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"{n} messages a threshold, {args.rounds} interleaved rounds (load {load})\n")
    print("| young threshold | collections a message | their CPU a message |")
    print("| --- | --- | --- |")
    for young in THRESHOLDS:
        print(f"| {young:,} | {runs[young] / n:.2f} | {spent[young] * 1000 / n:.3f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
