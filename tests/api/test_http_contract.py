"""Contract details a client meets on the wire: auth, redirects, errors, pagination order."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import psycopg
import pytest

from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.fakes.llm_server import Reply, call
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def http(stack: Stack) -> httpx.Client:
    return httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=30
    )


def test_auth_is_required_and_a_wrong_key_is_401(stack: Stack) -> None:
    assert httpx.get(f"{stack.url}/v1/health/").json()["status"] == "ok"
    assert httpx.get(f"{stack.url}/v1/agents/").status_code == 401
    wrong = httpx.get(f"{stack.url}/v1/agents/", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json() == {"detail": "Unauthorized"}


def test_collection_without_slash_redirects_and_unknown_routes_are_404(stack: Stack) -> None:
    with http(stack) as client:
        moved = client.get("/v1/agents?limit=5")
        assert moved.status_code == 307 and moved.headers["location"] == "/v1/agents/?limit=5"
        missing = client.get("/v1/nothing-here")
        assert missing.status_code == 404 and missing.json() == {"detail": "Not Found"}


def test_bad_bodies_are_422_and_unknown_ids_404(stack: Stack) -> None:
    with http(stack) as client:
        assert client.post("/v1/agents/", content=b"{not json").status_code == 422
        bad_rule = client.post(
            "/v1/agents/", json={"llm_config": LLM, "tool_rules": [{"type": "nope"}]}
        )
        assert bad_rule.status_code == 422
        too_long = client.post(
            "/v1/agents/",
            json={"llm_config": LLM, "memory_blocks": [{"label": "a", "value": "xx", "limit": 1}]},
        )
        assert too_long.status_code == 422 and "exceeds block limit" in too_long.text
        gone = client.get("/v1/agents/agent-00000000-0000-4000-8000-000000000000/messages")
        assert gone.status_code == 404
        assert client.get("/v1/runs/run-42").status_code == 400


def test_list_messages_order_quirks(stack: Stack) -> None:
    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        for text in ("one", "two", "three"):
            stack.fake.reply(f"re: {text}")
            sent = client.post(f"/v1/agents/{agent['id']}/messages", json={"input": text})
            assert sent.status_code == 200, sent.text
        path = f"/v1/agents/{agent['id']}/messages"
        newest = client.get(path, params={"limit": 2}).json()
        # desc picks the newest rows but shows them oldest first (Letta 0.16.1)
        assert [m["content"] for m in newest] == ["three", "re: three"]
        oldest = client.get(path, params={"limit": 2, "order": "asc"}).json()
        assert oldest[0]["message_type"] == "system_message"
        after = client.get(path, params={"after": newest[0]["id"], "order": "asc"}).json()
        assert [m["content"] for m in after] == ["re: three"]


def test_block_over_its_limit_is_400_or_422_as_in_letta(stack: Stack) -> None:
    with http(stack) as client:
        agent = client.post(
            "/v1/agents/",
            json={
                "llm_config": LLM,
                "memory_blocks": [{"label": "human", "value": "A", "limit": 5}],
            },
        )
        edit = client.patch(
            f"/v1/agents/{agent.json()['id']}/core-memory/blocks/human",
            json={"value": "far too long"},
        )
        assert edit.status_code == 400
        assert edit.json()["detail"] == (
            "INVALID_ARGUMENT: Value length (12 characters) exceeds block limit (5 characters)"
        )
        # Letta's request model refuses a body whose own value exceeds its own limit: 422.
        both = client.patch(
            f"/v1/agents/{agent.json()['id']}/core-memory/blocks/human",
            json={"value": "far too long", "limit": 3},
        )
        assert both.status_code == 422
        assert both.json()["detail"][0]["msg"] == (
            "Edit failed: Exceeds 3 character limit (requested 12)"
        )
        shrink = client.patch(
            f"/v1/agents/{agent.json()['id']}/core-memory/blocks/human", json={"limit": 0}
        )
        assert shrink.status_code == 422  # under the schema's minimum, before any check
        client.patch(
            f"/v1/agents/{agent.json()['id']}/core-memory/blocks/human", json={"value": "ABC"}
        )
        shrink = client.patch(
            f"/v1/agents/{agent.json()['id']}/core-memory/blocks/human", json={"limit": 2}
        )
        assert shrink.status_code == 400 and shrink.json()["detail"] == (
            "INVALID_ARGUMENT: Limit (2) cannot be less than current value length (3 characters)"
        )


def test_context_overview_and_cancel(stack: Stack) -> None:
    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        overview = client.get(f"/v1/agents/{agent['id']}/context").json()
        assert overview["context_window_size_max"] == 32000 and overview["num_messages"] == 1
        assert {f["function"]["name"] for f in overview["functions_definitions"]} >= {
            "conversation_search",
            "memory_insert",
        }
        stack.fake.reply("", call("conversation_search", query="x"), delay=0.5)
        stack.fake.reply("done")
        run = client.post(f"/v1/agents/{agent['id']}/messages/async", json={"input": "go"}).json()
        cancelled = client.post(f"/v1/agents/{agent['id']}/messages/cancel").json()
        assert cancelled in ({run["id"]: "cancelled"}, {})
        assert client.get(f"/v1/runs/{run['id']}").json()["status"] in ("cancelled", "completed")


def test_a_transaction_rolled_back_by_the_database_is_a_409_to_send_again(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deadlock or serialization failure: nothing was written and the database is there,
    so the answer says to send it again (Letta's clients retry a 409), not that the
    connection was lost."""
    from cairn.services import messages as message_service

    def deadlocked(*_: Any, **__: Any) -> None:
        raise psycopg.errors.DeadlockDetected("deadlock detected")

    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        monkeypatch.setattr(message_service, "cancel", deadlocked)
        answer = client.post(f"/v1/agents/{agent['id']}/messages/cancel")
    assert answer.status_code == 409 and answer.headers["retry-after"] == "1"
    assert "send it again" in answer.json()["detail"]


def test_openapi_is_served(stack: Stack) -> None:
    schema = httpx.get(f"{stack.url}/openapi.json").json()
    assert schema["info"]["title"] == "Cairn" and "/v1/agents/" in schema["paths"]


def test_a_send_without_a_configured_provider_names_the_variables(db: Database) -> None:
    with make_stack(db, openai_api_key=None, openai_base_url=None) as stack, http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        sent = client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "hi"})
    assert sent.status_code == 401
    error = sent.json()["error"]
    assert "OPENAI_API_KEY" in error["message"] and "ANTHROPIC_API_KEY" in error["message"]


def test_provider_failure_on_a_sync_send_is_a_502_and_frees_the_agent(stack: Stack) -> None:
    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        stack.fake.fail(503, "upstream down")
        sent = client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "hi"})
        assert sent.status_code == 502 and "upstream down" in sent.json()["error"]["message"]
        failed = client.get("/v1/runs/", params={"agent_id": agent["id"]}).json()[0]
        assert failed["status"] == "failed" and failed["stop_reason"] == "llm_api_error"
        stack.fake.reply("fine now")
        again = client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "hi"})
        assert again.status_code == 200 and again.json()["messages"][0]["content"] == "fine now"


def _ended(client: httpx.Client, run_id: str, timeout: float = 60) -> dict[str, Any]:
    def state() -> dict[str, Any] | None:
        got: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
        return got if got["status"] in ("completed", "failed", "cancelled") else None

    return eventually(state, timeout, pause=0.1)


def test_a_later_step_whose_provider_keeps_failing_ends_with_llm_api_error(
    stack: Stack,
) -> None:
    """One retry budget per step (the SDK's, CAIRN_LLM_MAX_RETRIES = 0 here): the provider
    is asked once for step 1, not again on each queue delivery, and its message is kept."""
    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        stack.fake.reply("", call("conversation_search", query="x"))
        stack.fake.fail(503, "the provider is overloaded", times=3)
        run = client.post(f"/v1/agents/{agent['id']}/messages/async", json={"input": "go"}).json()
        state = _ended(client, run["id"])
        assert state["status"] == "failed" and state["stop_reason"] == "llm_api_error"
        assert "the provider is overloaded" in state["metadata"]["error"]["message"]
        assert len(stack.fake.requests) == 2 and stack.fake.pending == 2
        kinds = [m["message_type"] for m in client.get(f"/v1/runs/{run['id']}/messages").json()]
        assert kinds[0] == "user_message"


def test_an_answer_with_no_choices_is_a_provider_error_retried_then_reported(
    db: Database,
) -> None:
    empty = Reply(
        raw_body='{"id": "x", "object": "chat.completion", "choices": []}',
        raw_content_type="application/json",
    )
    retries = [0]  # the model clients' retries, as the stack's settings would have them
    made_in: list[Stack] = []

    def llm_for(config: Any) -> Any:
        from cairn.llm.clients import client_for

        settings = made_in[0].runtime.settings.model_copy(update={"llm_max_retries": retries[0]})
        return client_for(config, settings)

    with make_stack(db, ports={"llm_for": llm_for}) as stack, http(stack) as client:
        made_in.append(stack)
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        stack.fake.when(lambda _: True, empty)
        sent = client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "hi"})
        assert sent.status_code == 502 and "no choices" in sent.json()["error"]["message"]
        assert len(stack.fake.requests) == 1  # CAIRN_LLM_MAX_RETRIES = 0: asked once
        stack.fake.reset()
        retries[0] = 1
        stack.fake.when(lambda r: len(stack.fake.requests) == 1, empty)
        stack.fake.when(lambda _: True, Reply(text="there you are"))
        again = client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "hi"})
        assert again.status_code == 200, again.text
        assert again.json()["messages"][-1]["content"] == "there you are"
        assert len(stack.fake.requests) == 2


def test_a_sync_send_answers_within_its_budget_however_long_the_provider_takes(
    stack: Stack,
) -> None:
    stack.runtime.settings.sync_budget_seconds = 3
    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        stack.fake.reply("slow", delay=30)  # hangs past the budget: the step goes to a worker
        stack.fake.reply("from the worker")
        started = time.monotonic()
        sent = client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "hi"})
        assert time.monotonic() - started < 5
        if sent.status_code == 200:
            # The queue's worker took the step at once and finished the run before the send
            # read it back (a loaded machine's order): the answer is whole, and the worker's.
            said = [m.get("content") for m in sent.json()["messages"]]
            assert said[-1] == "from the worker", said
            return
        assert sent.status_code == 202, sent.text
        state = _ended(client, sent.json()["id"])
        assert state["status"] == "completed" and state["stop_reason"] == "end_turn"
        replies = client.get(f"/v1/runs/{state['id']}/messages").json()
        assert [m.get("content") for m in replies if m["message_type"] == "assistant_message"] == [
            "from the worker"
        ]


def test_modify_list_paginate_and_tools(stack: Stack) -> None:
    with http(stack) as client:
        ids = [
            client.post(
                "/v1/agents/",
                json={
                    "llm_config": LLM,
                    "name": f"a{n}",
                    "tags": ["even" if n % 2 == 0 else "odd"],
                },
            ).json()["id"]
            for n in range(4)
        ]
        newest_first = [a["id"] for a in client.get("/v1/agents/", params={"limit": 2}).json()]
        assert newest_first == ids[::-1][:2]
        older = client.get("/v1/agents/", params={"limit": 2, "after": newest_first[-1]}).json()
        assert [a["id"] for a in older] == ids[::-1][2:]
        assert {a["name"] for a in client.get("/v1/agents/", params={"tags": "even"}).json()} == {
            "a0",
            "a2",
        }
        changed = client.patch(
            f"/v1/agents/{ids[0]}", json={"name": "renamed", "tags": ["x"], "unknown": 1}
        ).json()
        assert changed["name"] == "renamed" and changed["tags"] == ["x"]
        assert (
            client.patch(f"/v1/agents/{ids[0]}", json={"timezone": "Mars/Base"}).status_code == 422
        )
        tools = {t["name"]: t["id"] for t in client.get("/v1/tools/").json()}
        assert "archival_memory_search" in tools and "memory_rethink" in tools
        attached = client.patch(f"/v1/agents/{ids[0]}/tools/attach/{tools['memory_rethink']}")
        assert "memory_rethink" in {t["name"] for t in attached.json()["tools"]}
        client.patch(f"/v1/agents/{ids[0]}/tools/detach/{tools['memory_rethink']}")
        names = {t["name"] for t in client.get(f"/v1/agents/{ids[0]}/tools").json()}
        assert "memory_rethink" not in names
        assert client.get("/v1/agents/count").json() == 4
        client.delete(f"/v1/agents/{ids[1]}")
        assert client.delete(f"/v1/agents/{ids[1]}").status_code == 404


def test_stream_route_answers_with_sse_events(stack: Stack) -> None:
    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        stack.fake.reply("streamed hello")
        response = client.post(f"/v1/agents/{agent['id']}/messages/stream", json={"input": "hi"})
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [line[6:] for line in response.text.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    kinds = [__import__("json").loads(e)["message_type"] for e in events[:-1]]
    assert kinds == ["assistant_message", "stop_reason", "usage_statistics"]


def test_model_handles_resolve_against_a_compatible_server(stack: Stack) -> None:
    with http(stack) as client:
        models = client.get("/v1/models/").json()
        assert {m["handle"] for m in models} >= {"openai/gpt-fake-mini", "openai/gpt-fake-large"}
        agent = client.post("/v1/agents/", json={"model": "openai/gpt-fake-mini"}).json()
        assert agent["llm_config"]["model_endpoint"] == f"{stack.fake.base_url}/v1"
        assert agent["model"] == "openai/gpt-fake-mini"
        assert client.post("/v1/agents/", json={"model": "gpt-no-provider"}).status_code == 400


def test_archival_list_pages_and_delete(stack: Stack) -> None:
    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        path = f"/v1/agents/{agent['id']}/archival-memory"
        made = [client.post(path, json={"text": f"fact {n}"}).json()[0] for n in range(3)]
        again = client.post(path, json={"text": "fact 1"}).json()[0]
        assert again["id"] == made[1]["id"]  # an identical text is stored once
        first = client.get(path, params={"limit": 2}).json()
        rest = client.get(path, params={"limit": 2, "after": first[-1]["id"]}).json()
        assert [p["text"] for p in first + rest] == ["fact 0", "fact 1", "fact 2"]
        assert len(made[0]["embedding"]) == agent["embedding_config"]["embedding_dim"]
        gone = client.delete(f"{path}/{made[0]['id']}")
        assert gone.status_code == 200
        assert client.delete(f"{path}/{made[0]['id']}").status_code == 404
        assert [p["text"] for p in client.get(path).json()] == ["fact 1", "fact 2"]


def test_enable_sleeptime_builds_the_group_and_its_agent(stack: Stack) -> None:
    with http(stack) as client:
        primary = client.post(
            "/v1/agents/",
            json={
                "name": "sam",
                "llm_config": LLM,
                "enable_sleeptime": True,
                "memory_blocks": [{"label": "human", "value": "Ada"}],
            },
        ).json()
        group = primary["multi_agent_group"]
        assert group["manager_type"] == "sleeptime" and group["manager_agent_id"] == primary["id"]
        assert group["sleeptime_agent_frequency"] == 5 and group["turns_counter"] == -1
        assert {t["name"] for t in primary["tools"]} == {  # as 0.16.1 (fixture agent C)
            "send_message",
            "conversation_search",
            "archival_memory_search",
        }
        helper = client.get(f"/v1/agents/{group['agent_ids'][0]}").json()
        assert helper["name"] == "sam-sleeptime" and helper["agent_type"] == "sleeptime_agent"
        assert {t["name"] for t in helper["tools"]} == {
            "memory_replace",
            "memory_insert",
            "memory_rethink",
            "memory_finish_edits",
        }
        shared = {b["id"] for b in primary["blocks"]}
        assert shared < {b["id"] for b in helper["blocks"]}  # the same blocks, plus its own
        assert "memory_persona" in {b["label"] for b in helper["blocks"]}
        assert client.delete(f"/v1/agents/{primary['id']}").status_code == 200
        assert client.get(f"/v1/agents/{helper['id']}").status_code == 404


def test_a_sleeptime_group_is_read_and_its_frequency_changed(stack: Stack) -> None:
    with http(stack) as client:
        primary = client.post(
            "/v1/agents/", json={"llm_config": LLM, "enable_sleeptime": True}
        ).json()
        group_id = primary["multi_agent_group"]["id"]
        changed = client.patch(
            f"/v1/groups/{group_id}",
            json={"manager_config": {"manager_type": "sleeptime", "sleeptime_agent_frequency": 2}},
        )
        assert changed.status_code == 200 and changed.json()["sleeptime_agent_frequency"] == 2
        assert client.get(f"/v1/groups/{group_id}").json()["sleeptime_agent_frequency"] == 2
        wrong = client.patch(
            f"/v1/groups/{group_id}", json={"manager_config": {"manager_type": "round_robin"}}
        )
        assert wrong.status_code == 422
        missing = "group-00000000-0000-4000-8000-000000000000"
        assert client.get(f"/v1/groups/{missing}").status_code == 404


def test_a_sync_reply_shows_its_messages_as_listed_afterwards(stack: Stack) -> None:
    """The reply of a turn ended in its first step comes from that step's checkpoint, the
    reply of a longer turn from the database: both must read as the stored messages do."""
    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        path = f"/v1/agents/{agent['id']}/messages"
        stack.fake.reply("one step", reasoning="thinking it over")
        stack.fake.reply("", call("conversation_search", query="tea"))
        stack.fake.reply("two steps")
        for text in ("first", "second"):
            sent = client.post(path, json={"input": text})
            assert sent.status_code == 200, sent.text
            shown = sent.json()["messages"]
            run_id = shown[0]["run_id"]
            listed = [
                m
                for m in client.get(path, params={"order": "asc", "limit": 1000}).json()
                if m["run_id"] == run_id and m["message_type"] != "user_message"
            ]
            assert shown == listed
            assert all(isinstance(m["seq_id"], int) for m in shown)
        assert [m["message_type"] for m in shown] == [
            "tool_call_message",
            "tool_return_message",
            "assistant_message",
        ]


def test_a_send_to_an_unknown_agent_is_404_and_writes_nothing(stack: Stack) -> None:
    missing = "agent-00000000-0000-4000-8000-000000000000"
    with http(stack) as client:
        for body in (
            {"input": "hi"},
            {"messages": [{"type": "approval", "approve": True, "approval_request_id": "x"}]},
        ):
            sent = client.post(f"/v1/agents/{missing}/messages", json=body)
            assert sent.status_code == 404, sent.text
            assert sent.json()["detail"] == f"Agent with ID {missing} not found"
        assert (
            client.post(f"/v1/agents/{missing}/messages/async", json={"input": "hi"}).status_code
            == 404
        )
    with stack.runtime.db.connection() as conn:
        assert (
            conn.execute(
                "SELECT count(*) AS n FROM runs WHERE agent_id = %s", (missing,)
            ).fetchone()["n"]
            == 0
        )


def test_a_run_reads_running_while_its_model_answers(stack: Stack) -> None:
    """From its first step's claim to its end: it read `created` for the whole model call."""
    gate = threading.Event()
    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        stack.fake.when(lambda _: True, Reply(text="hello", gate=gate))
        created = client.post(f"/v1/agents/{agent['id']}/messages/async", json={"input": "hi"})
        run = created.json()
        eventually(lambda: stack.fake.requests, 30)  # the model is asked
        assert client.get(f"/v1/runs/{run['id']}").json()["status"] == "running"
        gate.set()
        assert _ended(client, run["id"])["status"] == "completed"


def test_a_send_made_again_with_the_same_otids_is_answered_by_its_first_run(
    stack: Stack,
) -> None:
    """A client that got no answer (a 503, a lost connection) sends again: the same otids
    start nothing new, the model is asked once, and the answer is the first run's."""
    with http(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        stack.fake.reply("Hello once.")
        body = {"messages": [{"role": "user", "content": "hi", "otid": "otid-7f3a"}]}
        first = client.post(f"/v1/agents/{agent['id']}/messages", json=body)
        again = client.post(f"/v1/agents/{agent['id']}/messages", json=body)
        assert first.status_code == again.status_code == 200, again.text
        said = [m for m in again.json()["messages"] if m["message_type"] == "assistant_message"]
        assert [m["content"] for m in said] == ["Hello once."]
        assert len(stack.fake.requests) == 1  # the model was asked once
        queued = client.post(f"/v1/agents/{agent['id']}/messages/async", json=body).json()
        runs = client.get("/v1/runs/", params={"agent_id": agent["id"]}).json()
        assert [r["id"] for r in runs] == [queued["id"]]  # one run, whichever door
        # another message (another otid, or none) is another send
        stack.fake.reply("Hello twice.")
        other = {"messages": [{"role": "user", "content": "hi", "otid": "otid-8b1c"}]}
        assert client.post(f"/v1/agents/{agent['id']}/messages", json=other).status_code == 200
        stack.fake.reply("Hello thrice.")
        plain = client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "hi"})
        assert plain.status_code == 200
        assert len(client.get("/v1/runs/", params={"agent_id": agent["id"]}).json()) == 3
