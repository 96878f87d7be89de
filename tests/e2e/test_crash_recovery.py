"""`make dev` killed with SIGKILL at each phase of a run, then started again on its data.

The queue and the workflows of the local stack live in its process, so a kill loses
whatever they held; the restart must send it again. Each trial kills the stack at one
point (`CAIRN_LOCAL_CRASH_AT`, or a SIGKILL from here while an approval waits), restarts it,
and checks that the run reached its end with each effect exactly once: the memory edit in
the block once, one message of each kind, the model's tool call made once when journaled.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from letta_client import Letta

from tests.e2e.test_local_stack import free_port, start, wait_for_health
from tests.fakes.llm_server import FakeLLM, Recorded, Reply, call
from tests.waiting import eventually

KEY = "sk-cairn-crash"
# Every point a step passes (cairn.faults); a crash at each must lose and repeat nothing.
# The hash embedder: loading a real one on every restart would cost seconds each time.
EMBEDDING = {
    "embedding_endpoint_type": "hugging-face",
    "embedding_model": "cairn-hash",
    "embedding_dim": 384,
}
STEP_POINTS = [
    "before_llm",
    "after_journal",
    "between_tools",
    "before_commit",
    "inside_commit",
    "after_commit",
]

# Two parallel calls are one tool call message and one tool return message, as in Letta.
ONE_TURN = ["user_message", "tool_call_message", "tool_return_message", "assistant_message"]


class Stack:
    def __init__(self, data_dir: Path, fake: FakeLLM, env: dict[str, str] | None = None) -> None:
        self.data_dir, self.fake, self.port = data_dir, fake, free_port()
        self.env = env or {}  # more of the stack's environment (tests/e2e/test_traces.py)
        self.proc: subprocess.Popen[str] | None = None
        self.outputs: list[str] = []

    def start(self, crash_at: str | None = None) -> Letta:
        env = {
            "CAIRN_API_KEY": KEY,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": f"{self.fake.base_url}/v1",
            "CAIRN_LLM_MAX_RETRIES": "0",
            "CAIRN_SLEEPTIME_RUN_TIMEOUT_SECONDS": "20",
            **self.env,
        }
        if crash_at:
            env["CAIRN_LOCAL_CRASH_AT"] = crash_at
        self.proc = start(self.data_dir, self.port, **env)
        # Read as it is written: a pipe nobody reads fills up (64 kB) and stalls the
        # stack's logging, and with it the stack (a loaded run hung 60 s on SIGINT).
        self._seen: list[str] = []
        self._reader = threading.Thread(
            target=lambda out=self.proc.stdout, seen=self._seen: seen.extend(out),  # type: ignore[misc]
            daemon=True,
        )
        self._reader.start()
        wait_for_health(self.port, self.proc)
        return Letta(
            base_url=f"http://127.0.0.1:{self.port}", api_key=KEY, max_retries=0, timeout=60
        )

    def killed(self, timeout: float = 60) -> str:
        """Wait for the armed crash (or SIGKILL now if none is armed); returns the output."""
        assert self.proc is not None
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail("the stack did not reach its crash point")
        output = self._output()
        assert self.proc.returncode == -signal.SIGKILL, output
        return output

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._output()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=60)
            self._output()

    def _output(self) -> str:
        """What the ended process wrote (its pipe closes when it exits)."""
        self._reader.join(timeout=30)
        output = "".join(self._seen)
        self.outputs.append(output)
        return output


def answers(request: Recorded) -> Reply:
    """The same answer to the same request, however often a restart repeats it."""
    body = json.dumps(request.body["messages"])
    if "<system-reminder>" in body:  # a sleeptime agent
        if request.body["messages"][-1]["role"] == "tool":
            return Reply(tool_calls=[call("memory_finish_edits")])
        return Reply(tool_calls=[call("memory_insert", label="human", new_str="Sleeptime fact")])
    last = request.body["messages"][-1]
    if last["role"] == "tool" or "memory_insert" not in request.tool_names:
        return Reply(text="Saved.")
    text = str(last["content"])
    fact = text.split("remember ")[-1].split('"')[0].split("'")[0]
    insert = call("memory_insert", label="human", new_str=fact)
    if "approval" in fact:  # one call, the one that waits for a person
        return Reply(tool_calls=[insert])
    return Reply(tool_calls=[insert, call("conversation_search", query=fact)])


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with FakeLLM() as fake:
        fake.when(lambda _: True, answers)
        made = Stack(tmp_path / "cairn", fake)
        try:
            yield made
        finally:
            made.stop()
            _stop_postgres(tmp_path / "cairn" / "pgdata")


def _stop_postgres(pgdata: Path) -> None:
    """A killed stack leaves its PostgreSQL running (the next start joins it): stop it."""
    pid_file = pgdata / "postmaster.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text().splitlines()[0])
        with __import__("contextlib").suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def ended(client: Letta, run_id: str) -> Any:
    return eventually(
        lambda: (
            (r := client.runs.retrieve(run_id)).status in ("completed", "failed", "cancelled") and r
        )
    )


def kinds(client: Letta, run_id: str) -> list[str]:
    return [m.message_type for m in client.runs.messages.list(run_id)]


def human(client: Letta, agent_id: str) -> str:
    return client.agents.blocks.retrieve("human", agent_id=agent_id).value


def new_agent(client: Letta, human_value: str, **options: Any) -> Any:
    blocks = [{"label": "human", "value": human_value}]
    return client.agents.create(
        model="openai/gpt-test", embedding_config=EMBEDDING, memory_blocks=blocks, **options
    )


def test_every_run_ends_with_every_effect_once_whatever_the_kill(stack: Stack) -> None:
    client = stack.start()
    agent = new_agent(client, "Ada")
    stack.kill()

    # -- a run with two tool calls, killed at each point of its step ------------------
    for point in STEP_POINTS:
        client = stack.start(crash_at=point)
        run = client.agents.messages.create_async(agent.id, input=f"remember fact-{point}")
        assert f"crashing at {point}" in stack.killed()
        client = stack.start()
        done = ended(client, run.id)
        assert (done.status, done.stop_reason) == ("completed", "end_turn"), point
        assert human(client, agent.id).count(f"fact-{point}") == 1, point
        assert kinds(client, run.id) == ONE_TURN, point
        stack.kill()  # an idle stack killed: nothing to recover, nothing lost
    assert "recovered after restart: {'redriven': 0" in stack.outputs[-1]
    # Usage counts each step once, however often it was delivered: two steps a run (the
    # two tool calls, then the answer), two model calls, two tool calls.
    client = stack.start()
    used = httpx.get(
        f"http://127.0.0.1:{stack.port}/v1/usage",
        params={"agent_id": agent.id},
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=30,
    ).json()["total"]
    runs = len(STEP_POINTS)
    assert (used["steps"], used["model_calls"], used["tool_calls"]) == (
        2 * runs,
        2 * runs,
        2 * runs,
    )
    # And so does the month's total the budgets are checked against (bumped by the same
    # checkpoints): the organization's tokens this month, as its steps have them.
    headers = {"Authorization": f"Bearer {KEY}"}
    month = httpx.get(
        f"http://127.0.0.1:{stack.port}/v1/usage/limits", headers=headers, timeout=30
    ).json()["month"]
    steps = httpx.get(
        f"http://127.0.0.1:{stack.port}/v1/usage",
        params={"start_date": month["start"]},
        headers=headers,
        timeout=30,
    ).json()["total"]
    assert month["tokens"] == steps["prompt_tokens"] + steps["completion_tokens"] > 0
    stack.kill()

    # -- an approval: killed while it waits, and while its answer runs ----------------
    client = stack.start(crash_at="inside_commit:2")
    gated = new_agent(
        client, "Bo", tool_rules=[{"type": "requires_approval", "tool_name": "memory_insert"}]
    )
    asked = client.agents.messages.create(gated.id, input="remember fact-approval")
    assert asked.stop_reason.stop_reason == "requires_approval"
    request = next(m for m in asked.messages if m.message_type == "approval_request_message")
    stack.kill()  # while the approval waits: its workflow dies with the process
    client = stack.start(crash_at="inside_commit")
    answer = client.agents.messages.create_async(
        gated.id,
        messages=[
            {  # type: ignore[list-item]
                "type": "approval",
                "approvals": [
                    {
                        "type": "approval",
                        "approve": True,
                        "tool_call_id": request.tool_call.tool_call_id,
                    }
                ],
            }
        ],
    )  # type: ignore[union-attr]
    assert "crashing at inside_commit" in stack.killed()
    assert "'workflows': 1" in stack.outputs[-1]  # the approval wait was started again
    client = stack.start()
    done = ended(client, answer.id)
    assert (done.status, done.stop_reason) == ("completed", "end_turn")
    assert human(client, gated.id).count("fact-approval") == 1
    stack.kill()

    # -- a sleeptime fan-out, killed while its sleeptime agent's step runs ------------
    client = stack.start(crash_at="before_commit:2")  # the primary's turn is the first
    primary = new_agent(client, "Cy", enable_sleeptime=True)
    client.agents.messages.create_async(primary.id, input="remember fact-primary")
    assert "crashing at before_commit #2" in stack.killed()
    client = stack.start()
    helpers = [a for a in client.agents.list() if a.name == f"{primary.name}-sleeptime"]
    assert len(helpers) == 1

    def helper_runs() -> list[Any]:
        found = list(client.runs.list(agent_ids=[helpers[0].id]))
        return found if found and all(r.status == "completed" for r in found) else []

    assert len(eventually(helper_runs)) == 1  # the fan-out sent again found its run
    assert human(client, primary.id).count("Sleeptime fact") == 1
    primary_runs = list(client.runs.list(agent_ids=[primary.id]))
    assert [r.status for r in primary_runs] == ["completed"]


def test_a_stream_killed_midway_ends_its_run_after_the_restart(stack: Stack) -> None:
    """SIGKILL while a streamed turn waits on its second model call: the first step's
    events reached the client; after the restart the run ends, every effect once."""
    import httpx

    client = stack.start()
    agent = new_agent(client, "Ada")
    stack.fake.reply(
        "",
        call("memory_insert", label="human", new_str="likes tea"),
        call("conversation_search", query="tea"),
    )
    stack.fake.reply("Saved.", delay=30)  # the model still thinking when the stack dies
    url = f"http://127.0.0.1:{stack.port}/v1/agents/{agent.id}/messages/stream"
    seen: list[dict[str, Any]] = []
    with (
        httpx.Client(timeout=60) as http,
        http.stream(
            "POST",
            url,
            headers={"Authorization": f"Bearer {KEY}"},
            json={"input": "remember likes tea"},
        ) as answer,
    ):
        for line in answer.iter_lines():
            if line.startswith("data: {"):
                seen.append(json.loads(line[6:]))
            if [e["message_type"] for e in seen] == ["tool_call_message", "tool_return_message"]:
                break
        stack.kill()  # mid-turn: the second step's model call is waiting
    run_id = seen[0]["run_id"]
    stack.fake.clear()  # the restarted stack asks again; `answers` says "Saved." at once
    client = stack.start()
    run = ended(client, run_id)
    assert run.status == "completed" and run.stop_reason == "end_turn"
    assert kinds(client, run_id) == ONE_TURN
    assert human(client, agent.id).count("likes tea") == 1


def test_a_file_job_killed_with_the_stack_finishes_after_the_restart(stack: Stack) -> None:
    """The whole stack is SIGKILLed as a file's job stands between parsing and embedding,
    then mid-way through its batches; each restart sends the lost job again, and it goes on
    from where it stopped: every chunk embedded once, the file completed."""
    lines = "\n".join(f"line {n:03d} of the trail notes" for n in range(300)).encode()
    client = stack.start()
    folder = client.folders.create(
        name="kb",
        embedding_config=EMBEDDING
        | {  # type: ignore[arg-type]
            "embedding_chunk_size": 5
        },
    )
    stack.kill()
    totals: list[int] = []
    for n, point in enumerate(("file_parsed", "file_batch:2")):
        client = stack.start(crash_at=point)
        made = client.folders.files.upload(folder.id, file=(f"notes{n}.txt", lines, "text/plain"))
        assert f"crashing at {point.split(':')[0]}" in stack.killed()
        client = stack.start()
        done = eventually(lambda c=client, m=made: completed(c, folder.id, m.id))
        assert done.total_chunks and done.chunks_embedded == done.total_chunks > 64 * 2
        totals.append(done.total_chunks)
        if n == 0:
            stack.kill()
    http_passages: list[dict[str, Any]] = []
    while True:  # every chunk of both files, once
        params = {"limit": 200, **({"after": http_passages[-1]["id"]} if http_passages else {})}
        page: list[dict[str, Any]] = client.get(  # type: ignore[assignment]
            f"/v1/folders/{folder.id}/passages", cast_to=object, options={"params": params}
        )
        http_passages += page
        if len(page) < 200:
            break
    keys = [(p["file_id"], p["id"]) for p in http_passages]
    assert len(keys) == sum(totals) and len(set(keys)) == len(keys)


def completed(client: Letta, folder_id: str, file_id: str) -> Any:
    return next(
        (
            f
            for f in client.folders.files.list(folder_id)
            if f.id == file_id and f.processing_status == "completed"
        ),
        None,
    )
