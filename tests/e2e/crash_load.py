"""Many agents sending while the whole local stack is SIGKILLed at seeded random moments,
with slow ("crawling") model calls beside them, a backlog of queued runs at each kill and
the cores busy with other work. Shared by the test (small) and `bench/crash_load.py`
(large): `run_scenario` returns what happened; the callers judge it.

Each sending agent is told `remember fact-<agent>-<n>`; the fake model answers with a memory
edit of every fact its turn was told and a search, then "Saved." (the same answer to the
same request, however often a restart repeats it). Coalescing agents (`coalescers`) get
bursts of sends that join one turn. Every run the API told a client about (200 or 202) must
end; each completed one stored its user messages, tool call, tool return and reply once, and
its facts are in the agent's memory once.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.test_local_stack import free_port, wait_for_health
from tests.fakes.llm_server import FakeLLM, Recorded, Reply, call

KEY = "sk-cairn-crash-load"
EMBEDDING = {
    "embedding_endpoint_type": "hugging-face",
    "embedding_model": "cairn-hash",
    "embedding_dim": 384,
}
TERMINAL = ("completed", "failed", "cancelled")


@dataclass
class Outcome:
    # run id -> the facts of the sends it answered ("" for crawlers; several when joined)
    accepted: dict[str, list[str]] = field(default_factory=dict)
    refused: int = 0  # sends that got no answer (the stack died under them) or a 4xx/5xx
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # every run, as it ended
    kinds: dict[str, list[str]] = field(default_factory=dict)  # a run's message types
    memory: dict[str, str] = field(default_factory=dict)  # agent id -> human block
    facts_of: dict[str, list[str]] = field(default_factory=dict)  # agent id -> facts sent
    seconds_to_end: float = 0.0  # from the last restart until every run had ended
    kills: list[float] = field(default_factory=list)  # seconds after each start
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)


def answers(request: Recorded) -> Reply:
    last = request.body["messages"][-1]
    if "CRAWL" in str(request.body["messages"]):
        return Reply(text="slowly, but here", delay=1.5)
    if last["role"] == "tool" or "memory_insert" not in request.tool_names:
        return Reply(text="Saved.")
    told: list[str] = []  # this turn's user messages: one, or a coalesced burst
    for message in reversed(request.body["messages"]):
        if message["role"] != "user":
            break
        told.insert(0, str(message["content"]))
    facts = [t.split("remember ")[-1].split('"')[0].split("'")[0] for t in told if "remember " in t]
    return Reply(
        tool_calls=[
            call("memory_insert", label="human", new_str="\n".join(facts)),
            call("conversation_search", query=facts[-1]),
        ]
    )


class Process:
    """`python -m cairn.local` on one data folder, its output in a file (a pipe nobody
    reads fills up and stalls the stack's logging, and with it the stack)."""

    def __init__(self, data_dir: Path, fake: FakeLLM) -> None:
        self.data_dir, self.fake, self.port = data_dir, fake, free_port()
        self.log = data_dir.parent / "stack.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env.update(
            CAIRN_DATA_DIR=str(self.data_dir),
            CAIRN_PORT=str(self.port),
            CAIRN_API_KEY=KEY,
            OPENAI_API_KEY="sk-test",
            CAIRN_LLM_MAX_RETRIES="0",
            OPENAI_BASE_URL=f"{self.fake.base_url}/v1",
        )
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "cairn.local"], env=env, stdout=out, stderr=out
            )
        wait_for_health(self.port, self.proc, timeout=180)  # type: ignore[arg-type]
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()
        pid_file = self.data_dir / "pgdata" / "postmaster.pid"
        if pid_file.exists():  # a killed stack leaves its PostgreSQL running
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text().splitlines()[0]), signal.SIGTERM)


def run_scenario(
    folder: Path,
    *,
    seed: int,
    agents: int,
    sends: int,
    kills: int,
    crawlers: int = 2,
    burn_cores: int = 1,
    end_within: float = 120.0,
    coalescers: int = 0,
    burst: int = 3,
) -> Outcome:
    rng = random.Random(seed)
    outcome = Outcome()
    headers = {"Authorization": f"Bearer {KEY}"}
    burners = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import time\nend = time.time() + 900\nwhile time.time() < end: pass",
            ]
        )
        for _ in range(burn_cores)
    ]
    with FakeLLM() as fake:
        fake.when(lambda _: True, answers)
        stack = Process(folder / "cairn", fake)
        try:
            url = stack.start()
            http = httpx.Client(base_url=url, headers=headers, timeout=60)
            senders = [_agent(http, f"Sender{i}") for i in range(agents)]
            slow = [_agent(http, f"Crawler{i}") for i in range(crawlers)]
            joiners = [
                _agent(http, f"Coalescer{i}", {"cairn_coalesce_seconds": 1.0})
                for i in range(coalescers)
            ]
            outcome.facts_of = {a: [] for a in [*senders, *joiners]}
            lock = threading.Lock()
            plan = [(a, n) for n in range(sends) for a in senders]
            rounds = [plan[i :: kills + 1] for i in range(kills + 1)]
            for round_no, batch in enumerate(rounds):
                # A burst to each coalescing agent, sent together: most of it joins one turn.
                batch = batch + [(a, round_no * burst + k) for a in joiners for k in range(burst)]
                threads = [
                    threading.Thread(
                        target=_send, args=(url, headers, a, n, i % 3 == 0, outcome, lock)
                    )
                    for i, (a, n) in enumerate(batch)
                ]
                threads += [
                    threading.Thread(target=_send, args=(url, headers, a, -1, False, outcome, lock))
                    for a in slow
                ]
                started = time.monotonic()
                for thread in threads:
                    thread.start()
                if round_no < kills:
                    pause = rng.uniform(0.3, 2.5)
                    time.sleep(pause)  # the kill's moment: seeded, not a wait for anything
                    stack.kill()
                    outcome.kills.append(round(time.monotonic() - started, 2))
                for thread in threads:
                    thread.join(120)
                if round_no < kills:
                    url = stack.start()
            restarted = time.monotonic()
            http = httpx.Client(base_url=url, headers=headers, timeout=60)
            deadline = restarted + end_within
            while True:
                every = _all_runs(http, [*senders, *joiners, *slow])
                if every and all(r["status"] in TERMINAL for r in every.values()):
                    break
                if time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            outcome.seconds_to_end = round(time.monotonic() - restarted, 1)
            outcome.runs = every
            for run_id in every:
                listed = http.get(f"/v1/runs/{run_id}/messages", params={"limit": 100}).json()
                outcome.kinds[run_id] = [m["message_type"] for m in listed]
            for agent_id in [*senders, *joiners]:
                block = http.get(f"/v1/agents/{agent_id}/core-memory/blocks/human").json()
                outcome.memory[agent_id] = block["value"]
            outcome.load = os.getloadavg()
        finally:
            stack.stop()
            for burner in burners:
                burner.kill()
    return outcome


def _agent(http: httpx.Client, name: str, metadata: dict[str, Any] | None = None) -> str:
    body = {
        "name": name,
        "model": "openai/gpt-test",
        "embedding_config": EMBEDDING,
        "memory_blocks": [{"label": "human", "value": name, "limit": 20000}],
        "metadata": metadata or {},
    }
    made = http.post("/v1/agents/", json=body)
    made.raise_for_status()
    return str(made.json()["id"])


def _send(
    url: str,
    headers: dict[str, str],
    agent_id: str,
    n: int,
    sync: bool,
    outcome: Outcome,
    lock: threading.Lock,
) -> None:
    fact = f"fact-{agent_id[-6:]}-{n}" if n >= 0 else ""
    text = f"remember {fact}" if fact else "CRAWL along"
    path = f"/v1/agents/{agent_id}/messages" + ("" if sync else "/async")
    if fact:
        with lock:
            outcome.facts_of[agent_id].append(fact)
    try:
        answer = httpx.post(url + path, headers=headers, json={"input": text}, timeout=60)
    except httpx.HTTPError:
        with lock:
            outcome.refused += 1
        return
    body = (
        answer.json()
        if answer.headers.get("content-type", "").startswith("application/json")
        else {}
    )
    # 202: the run; 200: Letta's response, whose messages name their run.
    run_id = body.get("id") or next(
        (m.get("run_id") for m in body.get("messages") or () if m.get("run_id")), None
    )
    with lock:
        if answer.status_code in (200, 202) and run_id:
            outcome.accepted.setdefault(str(run_id), []).append(fact)
        else:
            outcome.refused += 1


def _all_runs(http: httpx.Client, agent_ids: list[str]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    try:
        for agent_id in agent_ids:
            for run in http.get("/v1/runs/", params={"agent_id": agent_id, "limit": 1000}).json():
                found[run["id"]] = run
    except httpx.HTTPError:
        return {}
    return found


ONE_TURN = ["user_message", "tool_call_message", "tool_return_message", "assistant_message"]


def told(kinds: list[str] | None) -> int:
    """How many user messages a sender's turn took (one, or a coalesced burst) if it stored
    one whole turn: those, then a tool call, its return and the reply; else 0."""
    kinds = kinds or []
    users = len(kinds) - (len(ONE_TURN) - 1)
    return users if users >= 1 and kinds == ["user_message"] * users + ONE_TURN[1:] else 0


def problems(outcome: Outcome) -> list[str]:
    """What broke the promise: a run told about that did not end, a sender's turn whose
    messages or memory edit are not there exactly once."""
    found = []
    for run_id in outcome.accepted:
        if outcome.runs.get(run_id, {}).get("status") not in TERMINAL:
            found.append(f"run {run_id} was accepted and never ended")
    for run_id, run in outcome.runs.items():
        if run["status"] not in TERMINAL:
            found.append(f"run {run_id} is still {run['status']}")
    for agent_id, memory in outcome.memory.items():
        lines = memory.splitlines()
        theirs = [r for r in outcome.runs.values() if r["agent_id"] == agent_id]
        for run in theirs:
            if run["status"] != "completed":
                found.append(f"run {run['id']} of a sender ended {run['status']}: {run}")
            elif not told(outcome.kinds.get(run["id"])):
                found.append(f"run {run['id']} stored {outcome.kinds.get(run['id'])}")
        for fact in outcome.facts_of.get(agent_id, ()):
            if lines.count(fact) > 1:
                found.append(f"{fact} is in memory {lines.count(fact)} times")
        answered = [
            f
            for r, fs in outcome.accepted.items()
            for f in fs
            if f
            and outcome.runs.get(r, {}).get("agent_id") == agent_id
            and outcome.runs[r]["status"] == "completed"
        ]
        found += [
            f"{fact} (its run completed) is not in memory"
            for fact in answered
            if lines.count(fact) != 1
        ]
        facts = [line for line in lines if line.startswith("fact-")]
        messages = sum(
            told(outcome.kinds.get(r["id"])) for r in theirs if r["status"] == "completed"
        )
        if len(facts) != messages:
            found.append(f"{agent_id}: {len(facts)} facts in memory, {messages} told in turns")
    return found
