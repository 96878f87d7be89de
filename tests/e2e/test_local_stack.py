"""`make dev`'s program: starts, answers health, stops cleanly on Ctrl-C, restarts on its data."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(data_dir: Path, port: int, **env: str) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    environment.update(CAIRN_DATA_DIR=str(data_dir), CAIRN_PORT=str(port), **env)
    return subprocess.Popen(
        [sys.executable, "-m", "cairn.local"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for_health(port: int, proc: subprocess.Popen[str], timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"local stack exited early:\n{proc.stdout.read() if proc.stdout else ''}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health/", timeout=2) as r:
                return json.loads(r.read())
        except OSError:
            time.sleep(0.2)
    pytest.fail("local stack did not answer /v1/health/ in time")


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, output
    return output


def postgres_running(pgdata: Path) -> bool:
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().splitlines()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_local_stack_starts_stops_and_keeps_its_data(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "cairn", free_port()

    first = start(data_dir, port)
    assert wait_for_health(port, first) == {"version": "0.1.0", "status": "ok"}
    assert postgres_running(data_dir / "pgdata")
    first_output = stop(first)
    assert not postgres_running(data_dir / "pgdata"), "Ctrl-C must stop Postgres too"
    assert "migrations: 0001_initial, 0002_agent_lease, 0003_vector_indexes" in first_output
    key = (data_dir / "api-key").read_text().strip()
    assert f"API key: {key}" in first_output

    second = start(data_dir, port)
    wait_for_health(port, second)
    second_output = stop(second)
    assert "migrations: up to date" in second_output  # the same data directory, reused
    assert f"API key: {key}" in second_output


def test_local_stack_uses_the_configured_api_key(tmp_path: Path) -> None:
    port = free_port()
    proc = start(tmp_path / "cairn", port, CAIRN_API_KEY="sk-cairn-my-own-key")
    wait_for_health(port, proc)
    output = stop(proc)
    assert "sk-cairn-my-own-key" not in output  # a key the user chose is not echoed
    assert not (tmp_path / "cairn" / "api-key").exists()


def test_a_conversation_through_the_local_stack_and_its_queues(tmp_path: Path) -> None:
    from letta_client import Letta

    from tests.fakes.llm_server import FakeLLM, call

    port = free_port()
    with FakeLLM() as fake:
        proc = start(
            tmp_path / "cairn",
            port,
            CAIRN_API_KEY="sk-cairn-e2e",
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=f"{fake.base_url}/v1",
        )
        try:
            wait_for_health(port, proc)
            client = Letta(
                base_url=f"http://127.0.0.1:{port}",
                api_key="sk-cairn-e2e",
                max_retries=0,
                timeout=60,
            )
            agent = client.agents.create(
                model="openai/gpt-test", memory_blocks=[{"label": "human", "value": "Ada"}]
            )  # type: ignore[list-item]
            # two steps, then the reply's embedding job through the embedding queue
            fake.reply("", call("memory_insert", label="human", new_str="Likes: tea"))
            fake.reply("Noted.")
            reply = client.agents.messages.create(agent.id, input="I like tea")
            assert reply.stop_reason.stop_reason == "end_turn"
            assert reply.messages[-1].content == "Noted."
            block = client.agents.blocks.retrieve("human", agent_id=agent.id)
            assert block.value == "Ada\nLikes: tea"
        finally:
            output = stop(proc)
    assert "step and embedding queues in process" in output
    assert '"status":"embedded' in output  # the step function ran the embedding job


def test_a_scheduled_message_arrives_through_the_local_stacks_sweeper(tmp_path: Path) -> None:
    """`make dev`'s own sweeper round (every 10 s) fires a one-time message as a run."""
    from datetime import UTC, datetime, timedelta

    import httpx

    from tests.fakes.llm_server import FakeLLM

    port = free_port()
    with FakeLLM() as fake:
        fake.reply("Good morning, Ada.")
        proc = start(
            tmp_path / "cairn",
            port,
            CAIRN_API_KEY="sk-cairn-e2e",
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=f"{fake.base_url}/v1",
        )
        try:
            wait_for_health(port, proc)
            http = httpx.Client(
                base_url=f"http://127.0.0.1:{port}",
                timeout=60,
                headers={"Authorization": "Bearer sk-cairn-e2e"},
            )
            agent = http.post("/v1/agents/", json={"model": "openai/gpt-test"}).json()
            at = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
            made = http.post(
                f"/v1/agents/{agent['id']}/schedules",
                json={"input": "Say good morning.", "run_at": at},
            )
            assert made.status_code == 200, made.text
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                found = http.get("/v1/runs/", params={"agent_id": agent["id"]}).json()
                if any(r["status"] == "completed" for r in found):
                    break
                time.sleep(0.5)
            else:
                pytest.fail("the scheduled message never ran")
            assert found[0]["metadata"]["run_type"] == "scheduled_message"
            assert fake.requests[-1].last_text().endswith("Say good morning.")
        finally:
            stop(proc)
