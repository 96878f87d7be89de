"""Coalescing: an agent with `metadata.cairn_coalesce_seconds` takes a burst of user messages
as one turn (one model call that sees them all, every caller answered by it); without the
setting nothing changes for Letta's clients."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx

from cairn.store import runs
from tests.api.conftest import Stack
from tests.fakes.llm_server import Recorded, Reply
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def api(stack: Stack) -> httpx.Client:
    return httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=60
    )


def user_texts(request: Recorded) -> list[str]:
    """The user messages of a model request after its last assistant one (this turn's)."""
    texts: list[str] = []
    for message in request.body["messages"]:
        if message["role"] == "assistant":
            texts = []
        elif message["role"] == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else json.dumps(content))
    return [t for t in texts if "heartbeat" not in t]


def agent_with(http: httpx.Client, **metadata: Any) -> str:
    made = http.post("/v1/agents/", json={"llm_config": LLM, "metadata": metadata})
    assert made.status_code == 200, made.text
    return str(made.json()["id"])


def calls_for(stack: Stack, agent_id: str) -> list[Recorded]:
    """The model calls of the test's one agent (each test has a stack of its own)."""
    return [r for r in stack.fake.requests if r.body.get("messages")]


def inputs_taken(stack: Stack, agent_id: str) -> int:
    """How many inputs the agent's runs hold (a send that joined a waiting run adds its own)."""
    with stack.runtime.db.connection() as conn:
        row = conn.execute(
            "SELECT coalesce(sum(jsonb_array_length(request_config -> 'input')), 0) AS n"
            " FROM runs WHERE agent_id = %s",
            (agent_id,),
        ).fetchone()
    return int(row["n"]) if row else 0


def test_five_sends_in_200_ms_make_one_turn_that_answers_every_caller(stack: Stack) -> None:
    http = api(stack)
    agent_id = agent_with(http, cairn_coalesce_seconds=5.0)  # slack for a loaded machine
    stack.fake.when(lambda r: True, lambda r: Reply(text=f"all {len(user_texts(r))} read"))
    answers: dict[int, httpx.Response] = {}

    def send(n: int) -> None:
        with api(stack) as client:
            answers[n] = client.post(f"/v1/agents/{agent_id}/messages", json={"input": f"part {n}"})

    threads = [threading.Thread(target=send, args=(n,)) for n in range(5)]
    for n, thread in enumerate(threads):
        thread.start()
        # In this order: each send taken before the next goes (on a quiet machine, within
        # a few ms; a clock between them let a busy machine's fourth overtake its third).
        eventually(lambda n=n: inputs_taken(stack, agent_id) == n + 1)  # type: ignore[misc]
    for thread in threads:
        thread.join(60)

    [call] = calls_for(stack, agent_id)  # one model call
    assert [t.split("part ")[-1][0] for t in user_texts(call)] == ["0", "1", "2", "3", "4"]
    run_ids = {m["run_id"] for a in answers.values() for m in a.json()["messages"]}
    assert len(run_ids) == 1 and all(a.status_code == 200 for a in answers.values())
    for answer in answers.values():  # every caller gets the turn's reply, its inputs left out
        assert [
            m["content"]
            for m in answer.json()["messages"]
            if m["message_type"] == "assistant_message"
        ] == ["all 5 read"]
    [run_id] = run_ids
    kinds = [m["message_type"] for m in http.get(f"/v1/runs/{run_id}/messages").json()]
    assert kinds == ["user_message"] * 5 + ["assistant_message"]
    shown = http.get(f"/v1/runs/{run_id}").json()
    assert "coalesce_until" not in shown["request_config"]  # Cairn's own, kept out of Letta's


def test_sends_while_the_previous_turn_runs_join_the_queued_turn(stack: Stack) -> None:
    http = api(stack)
    agent_id = agent_with(http, cairn_coalesce_seconds=0.2)
    busy = threading.Event()

    def answer(request: Recorded) -> Reply:
        if "slow one" in request.last_text():
            busy.set()
            return Reply(text="done slowly", delay=3.0)  # the sends below come meanwhile
        return Reply(text=f"caught up on {len(user_texts(request))}")

    stack.fake.when(lambda r: True, answer)
    first = http.post(f"/v1/agents/{agent_id}/messages/async", json={"input": "slow one"}).json()
    assert busy.wait(30)
    queued = [
        http.post(f"/v1/agents/{agent_id}/messages/async", json={"input": f"then {n}"})
        for n in range(3)
    ]
    assert len({q.json()["id"] for q in queued}) == 1 and queued[0].json()["id"] != first["id"]
    streamed = http.post(f"/v1/agents/{agent_id}/messages/stream", json={"input": "and a stream"})
    assert streamed.status_code == 200
    events = [
        json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: {")
    ]
    assert [e["content"] for e in events if e.get("message_type") == "assistant_message"] == [
        "caught up on 4"
    ]
    assert {e["run_id"] for e in events if "run_id" in e} == {queued[0].json()["id"]}
    eventually(
        lambda: http.get(f"/v1/runs/{queued[0].json()['id']}").json()["status"] == "completed"
    )
    calls = calls_for(stack, agent_id)
    assert len(calls) == 2
    expected = ["then 0", "then 1", "then 2", "and a stream"]
    seen = user_texts(calls[1])
    assert len(seen) == 4 and all(t.endswith(e) for t, e in zip(seen, expected, strict=True)), seen


def test_without_the_setting_each_send_is_its_own_turn(stack: Stack) -> None:
    http = api(stack)
    agent_id = agent_with(http)
    stack.fake.when(lambda r: True, lambda r: Reply(text="one by one"))
    sent = [
        http.post(f"/v1/agents/{agent_id}/messages/async", json={"input": f"m{n}"}).json()
        for n in range(3)
    ]
    assert len({s["id"] for s in sent}) == 3
    eventually(
        lambda: all(http.get(f"/v1/runs/{s['id']}").json()["status"] == "completed" for s in sent)
    )
    assert [len(user_texts(c)) for c in calls_for(stack, agent_id)] == [1, 1, 1]
    with stack.runtime.db.connection() as conn:
        assert all(
            "coalesce_until" not in runs.get_run(conn, stack.org_id, s["id"]).request_config
            for s in sent
        )  # type: ignore[union-attr]


def test_a_bad_window_is_refused_naming_the_setting(stack: Stack) -> None:
    http = api(stack)
    for bad in ("soon", 60, -1, True):
        made = http.post(
            "/v1/agents/", json={"llm_config": LLM, "metadata": {"cairn_coalesce_seconds": bad}}
        )
        assert made.status_code == 422 and "cairn_coalesce_seconds" in made.text, made.text
    agent_id = agent_with(http)
    patched = http.patch(
        f"/v1/agents/{agent_id}", json={"metadata": {"cairn_coalesce_seconds": 11}}
    )
    assert patched.status_code == 422 and "cairn_coalesce_seconds" in patched.text
    ok = http.patch(f"/v1/agents/{agent_id}", json={"metadata": {"cairn_coalesce_seconds": 0.5}})
    assert ok.status_code == 200 and ok.json()["metadata"] == {"cairn_coalesce_seconds": 0.5}
