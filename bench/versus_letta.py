"""Cairn beside Letta 0.16.1 on one fake model, interleaved, with the floor (issue 65).

Letta runs as its own self-hosted server (`letta server`, on a PostgreSQL of its own: pass
its URL, its server's process id and its PostgreSQL's data folder); Cairn runs as `make dev`
runs it (`python -m cairn.local`, started here). Both answer the same fake OpenAI model
(tests/fakes/llm_server.py), which replies at once with text and no tool call. In rounds, one
`letta_v1_agent` on each gets `--batch` sequential messages, Letta's, then the floor's (one
OpenAI SDK call to the fake with Cairn's latest request, then one fsync'd commit), then
Cairn's, so a drift of the machine's load falls on all three alike. The floor is measured
twice: with the SDK's typed `create` (issue 65's floor, Letta's call) and with its request
method given the body's bytes (`raw`: how Cairn calls it, without `create`'s walk over the
body).

Fifty messages a round by default, as issue 65 measured: the first message after a pause
costs the stack 15-50 % more CPU than the next ones (the machine's clock and caches:
`bench/idle_gap.py`), and each round begins after the other servers' turns, so short
rounds charge Cairn's few-millisecond messages that pause again and again (Letta's
200-ms ones hardly notice it).

Prints each one's p50 and p99, CPU per message (the server's processes and its PostgreSQL's,
from /proc) and the ratios, with the machine's load.

    .venv/bin/python bench/versus_letta.py --letta http://127.0.0.1:8284 \\
        --letta-pid PID --letta-pgdata DIR [--rounds 4] [--batch 50]

Letta's server must reach the fake: start it with OPENAI_API_KEY set (any value); each of
its agents names the fake's URL as its model endpoint.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_stack import (  # noqa: E402
    cpu_seconds,
    floor,
    free_port,
    postmaster,
    start_database,
    start_stack,
    stop_stack,
)
from tests.fakes.llm_server import FakeLLM, Recorded, Reply  # noqa: E402

# Cairn's agent without message embeddings, as Letta's server runs (`--cairn-embedding both`).
NO_EMBEDDINGS = "cairn, no message embeddings"
HASH = {"embedding_model": "cairn-hash", "embedding_endpoint_type": "hash", "embedding_dim": 384}


def agent_body(fake: FakeLLM) -> dict[str, Any]:
    endpoint = f"{fake.base_url}/v1"
    return {
        "name": f"bench-{time.monotonic_ns()}",
        "agent_type": "letta_v1_agent",
        "llm_config": {
            "model": "gpt-bench",
            "model_endpoint_type": "openai",
            "model_endpoint": endpoint,
            "context_window": 128_000,
        },
        "embedding_config": {
            "embedding_model": "text-embedding-3-small",
            "embedding_endpoint_type": "openai",
            "embedding_endpoint": endpoint,
            "embedding_dim": 1536,
        },
    }


def send(client: httpx.Client, agent: str, n: int) -> list[float]:
    times = []
    for k in range(n):
        started = time.perf_counter()
        r = client.post(
            f"/v1/agents/{agent}/messages",
            json={"messages": [{"role": "user", "content": f"message {k}"}]},
        )
        times.append((time.perf_counter() - started) * 1000)
        assert r.status_code == 200, r.text
    return times


def pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--letta", required=True, help="Letta's base URL")
    parser.add_argument("--letta-pid", type=int, required=True, help="its server's process")
    parser.add_argument("--letta-pgdata", required=True, help="its PostgreSQL's data folder")
    parser.add_argument("--letta-key", default=os.environ.get("LETTA_API_KEY", ""))
    parser.add_argument(
        "--cairn-embedding",
        choices=("openai", "hash", "off", "both"),
        default="openai",
        help="Cairn's agent embeds its messages with the fake's OpenAI embeddings (as Letta's"
        " agent is configured), the model-free hashing embedder, or not at all (`off`:"
        " metadata.cairn_message_embeddings false, the same work as Letta's server, which"
        " embeds messages only with Turbopuffer: letta/helpers/tpuf_client.py); `both`: an"
        " agent with OpenAI embeddings and one without, each its own row",
    )
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--batch", type=int, default=50, help="messages a round, each server")
    args = parser.parse_args()
    letta_pg = int((Path(args.letta_pgdata) / "postmaster.pid").read_text().split()[0])
    requests: list[dict[str, Any]] = []

    def answer(recorded: Recorded) -> Reply:
        requests.append(recorded.body)
        return Reply(text="ok", usage=(1, 1))

    times: dict[str, list[float]] = {"letta": [], "floor": [], "raw floor": [], "cairn": []}
    cairns = {"cairn": args.cairn_embedding}
    if args.cairn_embedding == "both":
        cairns = {"cairn": "openai", NO_EMBEDDINGS: "off"}
    for name in cairns:
        times[name] = []
    cpu = {"letta": 0.0, **dict.fromkeys(cairns, 0.0)}
    port = free_port()
    with (
        tempfile.TemporaryDirectory() as data,
        FakeLLM() as fake,
        open(Path(data) / "stack.log", "w") as log,
    ):
        fake.when(lambda r: True, answer)
        # As `make dev` starts it: counting statements would cost Cairn's side CPU that
        # neither `make dev` nor Letta's server spends.
        dsn, database = start_database(data, counting=False)
        stack = start_stack(data, dsn, port, fake, log)
        letta_auth = {"Authorization": f"Bearer {args.letta_key}"} if args.letta_key else {}
        try:
            with (
                httpx.Client(base_url=args.letta, headers=letta_auth, timeout=120) as letta,
                httpx.Client(
                    base_url=f"http://127.0.0.1:{port}",
                    headers={"Authorization": "Bearer sk-cairn-bench"},
                    timeout=120,
                ) as cairn,
            ):
                clients = {"letta": letta, **dict.fromkeys(cairns, cairn)}
                agents = {}
                for name, client in clients.items():
                    body = agent_body(fake)
                    if cairns.get(name) == "hash":
                        body["embedding_config"] = HASH
                    if cairns.get(name) == "off":
                        body["metadata"] = {"cairn_message_embeddings": False}
                    made = client.post("/v1/agents/", json=body)
                    assert made.status_code == 200, made.text
                    agents[name] = made.json()["id"]
                    send(client, agents[name], 3)  # warm up
                cairn_body = requests[-1]  # Cairn's last model request (it warmed up last)
                roots = {
                    "letta": (args.letta_pid, letta_pg),
                    **dict.fromkeys(cairns, (stack.pid, postmaster(data))),
                }
                for round_ in range(args.rounds):
                    order = list(cairns) if round_ % 2 == 0 else list(cairns)[::-1]
                    for name in ("letta", "floor", "raw floor", *order):
                        if name in ("floor", "raw floor"):  # the request Cairn's turn sent
                            raw = name == "raw floor"
                            times[name] += floor(fake, dsn, body=cairn_body, n=args.batch, raw=raw)
                            continue
                        before = cpu_seconds(*roots[name])
                        times[name] += send(clients[name], agents[name], args.batch)
                        if name in cairns:
                            cairn_body = requests[-1]
                        time.sleep(1)  # its after-work (embedding jobs, summaries) counted
                        cpu[name] += cpu_seconds(*roots[name]) - before
        finally:
            stop_stack(stack)
            database.cleanup()
    n = args.rounds * args.batch
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    p50 = {k: statistics.median(v) for k, v in times.items()}
    per = {k: v * 1000 / n for k, v in cpu.items()}
    print(
        f"{args.rounds} rounds of {args.batch} messages each, interleaved (load {load}); Cairn's"
        f" message embeddings: {args.cairn_embedding}\n"
    )
    print("| | p50 ms | p99 ms | CPU a message (server + PostgreSQL) |")
    print("| --- | --- | --- | --- |")
    for name in ("letta", "floor", "raw floor", *cairns):
        cpu_cell = f"{per[name]:.1f} ms" if name in per else "-"
        print(f"| {name} | {p50[name]:.1f} | {pct(times[name], 0.99):.1f} | {cpu_cell} |")
    for name in cairns:
        print(
            f"\n{name}: p50 {p50['letta'] / p50[name]:.1f}x lower than Letta's, "
            f"{p50[name] / p50['floor']:.2f}x the floor ({p50[name] / p50['raw floor']:.2f}x the"
            f" raw floor); CPU a message {per['letta'] / per[name]:.1f}x less than Letta's"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
