"""A step's claim as the agent's context window grows: the same step claimed again and
again, in turn: with the window held parsed by this process (store/parsed_windows.py) and
unchanged since (the claim reads what was appended: here nothing); held but moved (its
stamp changed: the claim reads the window's versions and sends no message); not held (the
whole window read and parsed); and held on a connection without server-side prepared
statements (as every shape but `size=small` runs, behind RDS Proxy: PostgreSQL plans the
claim each time).
Prints the claim's time (PostgreSQL's work and the parse, one process, one thread) and the
bytes of window the claim sent, at each window size, with the load.

    .venv/bin/python bench/claim_window.py [--sizes 100,300,1000] [-n 40]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.llm_server import FakeLLM  # noqa: E402
from tests.integration.engine_harness import (  # noqa: E402
    drive,
    engine_for,
    make_agent,
    send,
    start_run,
    user,
)

from cairn.domain import Organization  # noqa: E402
from cairn.local.postgres import start_embedded  # noqa: E402
from cairn.store import Database, agents, claim, tenancy  # noqa: E402
from cairn.store.migrate import apply_migrations  # noqa: E402
from cairn.store.parsed_windows import WINDOWS  # noqa: E402


def _window_of(db: Database, agent) -> list[str]:  # type: ignore[no-untyped-def]
    with db.connection() as conn:
        fresh = agents.get(conn, agent.organization_id, agent.id)
    assert fresh is not None
    return fresh.message_ids


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,300,1000", help="window sizes (messages)")
    parser.add_argument("-n", type=int, default=40, help="claims of each kind at each size")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    sent: list[int] = []
    original = claim._window

    def measured(agent_id: str, row: dict, held: object) -> object:  # type: ignore[type-arg]
        sent.append(len(row["context"].encode()))
        return original(agent_id, row, held)  # type: ignore[arg-type]

    claim._window = measured  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as fake:
        dsn, server = start_embedded(Path(tmp) / "pgdata", cleanup="delete")
        db = Database(dsn, max_size=2)
        unprepared = Database(dsn, prepare=False)
        try:
            apply_migrations(dsn)
            with db.transaction() as conn:
                org = tenancy.create_organization(conn, Organization(name="bench"))
            # a window that never fills: every message stays in it, as in a young agent
            engine = engine_for(db, fake)
            agent = make_agent(db, org, context_window=1_000_000)
            print(
                "| window | claim, held | held, moved | read whole | held, unprepared"
                " | bytes sent, held | moved | whole |"
            )
            print("| --- | --- | --- | --- | --- | --- | --- | --- |")
            for size in sizes:
                while (window := len(_window_of(db, agent))) < size:  # a turn adds two
                    fake.reply(f"reply {window}: " + "the heron by the lake " * 6)
                    send(engine, agent, f"turn {window}: " + "what did we say " * 6)
                run, command, *_ = start_run(engine, org.id, agent.id, [user(agent, "and now?")])
                kinds = ("held", "moved", "whole", "unprepared")
                times: dict[str, list[float]] = {k: [] for k in kinds}
                bytes_: dict[str, list[int]] = {k: [] for k in kinds}
                for i in range(len(kinds) * args.n):
                    kind = kinds[i % len(kinds)]
                    if kind == "whole":
                        WINDOWS.forget()
                    held = WINDOWS.held(agent.id)
                    if kind == "moved" and held is not None:
                        WINDOWS.keep(agent.id, dataclasses.replace(held, stamp=-2))
                    with (unprepared if kind == "unprepared" else db).connection() as conn:
                        started = time.perf_counter()
                        got = claim.claim(
                            conn, org.id, run.id, 0, lease_seconds=60, agent_id=agent.id
                        )
                        times[kind].append((time.perf_counter() - started) * 1000)
                    assert got.agent is not None and len(got.context) == window
                    bytes_[kind].append(sent[-1])
                fake.reply("ok")
                drive(engine, command)  # the run ends: the agent is free for more turns
                print(
                    f"| {window} | {statistics.median(times['held'][1:]):.2f} ms"
                    f" | {statistics.median(times['moved'][1:]):.2f} ms"
                    f" | {statistics.median(times['whole']):.2f} ms"
                    f" | {statistics.median(times['unprepared'][1:]):.2f} ms"
                    f" | {statistics.median(bytes_['held'][1:]):,.0f}"
                    f" | {statistics.median(bytes_['moved'][1:]):,.0f}"
                    f" | {statistics.median(bytes_['whole']):,.0f} |"
                )
        finally:
            db.close()
            unprepared.close()
            server.cleanup()
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"\n(load {load}; the first claim of each size, which fills what is held, left out)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
