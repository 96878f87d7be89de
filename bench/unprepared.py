"""A turn's PostgreSQL work with server-side prepared statements and without (as every shape
but `size=small` runs, behind RDS Proxy), in turns interleaved on one database.

Two engines on one embedded PostgreSQL, one connection each, drive turns of one agent each
(the fake model answering at once), alternating in rounds. Prints, for each: the
database's CPU a turn (every PostgreSQL process, from /proc), and what pg_stat_statements
says it spent planning and executing the client's statements a turn, with the load.

    .venv/bin/python bench/unprepared.py [--rounds 6] [--turns 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_stack import cpu_seconds, postmaster, start_database  # noqa: E402
from tests.fakes.llm_server import FakeLLM  # noqa: E402
from tests.integration.engine_harness import engine_for, make_agent, send  # noqa: E402

from cairn.domain import Organization  # noqa: E402
from cairn.store import Database, tenancy  # noqa: E402
from cairn.store.migrate import apply_migrations  # noqa: E402


def database_cpu_ms(root: int) -> float:
    """CPU of the server's process and its children (every backend), in ms, to the ns."""
    return cpu_seconds(root, precise=True) * 1000


def spent(dsn: str, user: str) -> tuple[float, float]:
    """(planning, execution) ms of the client statements `user` ran, since the last reset."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(total_plan_time), 0), coalesce(sum(total_exec_time), 0)"
            " FROM pg_stat_statements WHERE toplevel AND userid = to_regrole(%s)",
            (user,),
        ).fetchone()
    assert row is not None
    return float(row[0]), float(row[1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--turns", type=int, default=10, help="turns a round, each mode")
    args = parser.parse_args()
    modes = {"prepared": True, "not prepared": False}
    with tempfile.TemporaryDirectory() as data, FakeLLM() as fake:
        dsn, database = start_database(data)
        apply_migrations(dsn)
        root = postmaster(data)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
            conn.execute("SELECT pg_reload_conf()")
            for name in modes:  # a role each, so pg_stat_statements tells them apart
                role = name.replace(" ", "_")
                conn.execute(f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD 'bench'")
        engines, agents, dbs = {}, {}, []
        try:
            for name, prepare in modes.items():
                role = name.replace(" ", "_")
                db = Database(
                    psycopg.conninfo.make_conninfo(dsn, user=role, password="bench"),
                    prepare=prepare,
                )
                dbs.append(db)
                with db.transaction() as conn:
                    org = tenancy.create_organization(conn, Organization(name=name))
                engines[name] = engine_for(db, fake)
                agents[name] = make_agent(db, org, context_window=1_000_000)
                for n in range(10):  # warm: every statement past its first plans
                    fake.reply("ok")
                    send(engines[name], agents[name], f"warming {n}")
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("SELECT pg_stat_statements_reset()")
            cpu: dict[str, list[float]] = {name: [] for name in modes}
            for _ in range(args.rounds):
                for name in modes:
                    before = database_cpu_ms(root)
                    for n in range(args.turns):
                        fake.reply("ok")
                        send(engines[name], agents[name], f"turn {n}")
                    cpu[name].append((database_cpu_ms(root) - before) / args.turns)
            turns = args.rounds * args.turns
            load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
            print(f"{args.rounds} rounds of {args.turns} turns each, interleaved (load {load})\n")
            print("| | PostgreSQL's CPU a turn (median of rounds) | planning | execution |")
            print("| --- | --- | --- | --- |")
            for name in modes:
                plan, run = spent(dsn, name.replace(" ", "_"))
                print(
                    f"| {name} | {statistics.median(cpu[name]):.2f} ms"
                    f" | {plan / turns:.2f} ms | {run / turns:.2f} ms |"
                )
        finally:
            for db in dbs:
                db.close()
            database.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
