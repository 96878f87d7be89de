"""What a Letta client relies on, through the unchanged letta-client 1.5.0 (issue: API rebuilt).

Each test reproduces a behaviour that once differed from a real 0.16.1 server.
"""

from __future__ import annotations

from datetime import datetime

import httpx
import pytest
from letta_client import APIStatusError, UnprocessableEntityError

from tests.api.conftest import Stack
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def names(tools: object) -> set[str]:
    return {t.name for t in tools}  # type: ignore[attr-defined]


def test_the_auto_pager_ends_on_an_agents_tools_and_blocks(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(
        llm_config=LLM,  # type: ignore[arg-type]
        memory_blocks=[{"label": f"b{i}", "value": str(i)} for i in range(5)],
        tools=["archival_memory_insert", "archival_memory_search"],
    )
    requests: list[httpx.Request] = []
    client = client.with_options(
        http_client=httpx.Client(event_hooks={"request": [requests.append]})
    )
    tools = list(client.agents.tools.list(agent_id=agent.id, limit=2))
    assert len(tools) == 5 and len({t.id for t in tools}) == 5  # 3 pages and an empty one
    assert sum("/tools" in str(r.url) for r in requests) == 4
    blocks = list(client.agents.blocks.list(agent_id=agent.id, limit=2))
    assert sorted(b.label for b in blocks) == [f"b{i}" for i in range(5)]
    assert len({b.id for b in blocks}) == 5


def test_default_tool_sets_are_letta_0161s(stack: Stack) -> None:
    client = stack.client()
    v1 = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    v1 = client.agents.retrieve(v1.id, include=["agent.tools"])
    assert names(v1.tools) == {"conversation_search", "memory_insert", "memory_replace"}
    assert v1.tool_rules == []  # fixture agent A: no rules for a plain v1 agent
    v2 = client.agents.create(llm_config=LLM, agent_type="memgpt_v2_agent")  # type: ignore[arg-type]
    assert names(client.agents.tools.list(agent_id=v2.id)) == {
        "send_message",
        "conversation_search",
        "memory_insert",
        "memory_replace",
    }
    sleepy = client.agents.create(llm_config=LLM, enable_sleeptime=True)  # type: ignore[arg-type]
    assert names(client.agents.tools.list(agent_id=sleepy.id)) == {
        "send_message",
        "conversation_search",
        "archival_memory_search",
    }


def test_a_model_calling_memory_insert_edits_the_block(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(
        llm_config=LLM,  # type: ignore[arg-type]
        memory_blocks=[{"label": "human", "value": "Name: Ada"}],
    )
    stack.fake.reply("", call("memory_insert", label="human", new_str="Likes: tea"))
    stack.fake.reply("Noted.")
    reply = client.agents.messages.create(agent.id, input="I like tea")
    returned = next(m for m in reply.messages if m.message_type == "tool_return_message")
    assert returned.status == "success"  # type: ignore[union-attr]
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == (
        "Name: Ada\nLikes: tea"
    )


def test_tool_return_is_the_tools_own_string_for_approved_and_client_side_calls(
    stack: Stack,
) -> None:
    client = stack.client()
    agent = client.agents.create(
        llm_config=LLM,  # type: ignore[arg-type]
        memory_blocks=[{"label": "human", "value": "Ada"}],
    )
    client.agents.tools.update_approval(
        "memory_insert", agent_id=agent.id, body_requires_approval=True
    )
    stack.fake.reply("", call("memory_insert", label="human", new_str="tea"))
    asked = client.agents.messages.create(agent.id, input="remember tea")
    request = asked.messages[-1]
    call_id = request.tool_call.tool_call_id  # type: ignore[union-attr]
    stack.fake.reply("Done.")
    approved = client.agents.messages.create(
        agent.id,
        messages=[{"type": "approval", "approvals": [{"approve": True, "tool_call_id": call_id}]}],  # type: ignore[list-item]
    )
    ret = next(m for m in approved.messages if m.message_type == "tool_return_message")
    assert ret.tool_return.startswith("The core memory block with label `human`")  # type: ignore[union-attr]
    assert not ret.tool_return.lstrip().startswith("{")  # type: ignore[union-attr]

    stack.fake.reply("", call("memory_insert", label="human", new_str="coffee"))
    asked = client.agents.messages.create(agent.id, input="remember coffee")
    call_id = asked.messages[-1].tool_call.tool_call_id  # type: ignore[union-attr]
    stack.fake.reply("Ok.")
    done = client.agents.messages.create(
        agent.id,
        messages=[
            {
                "type": "approval",
                "approvals": [
                    {
                        "type": "tool",
                        "tool_call_id": call_id,
                        "tool_return": "ran on device",
                        "status": "success",
                    }
                ],
            }
        ],  # type: ignore[list-item]
    )
    ret = next(m for m in done.messages if m.message_type == "tool_return_message")
    assert ret.tool_return == "ran on device"  # type: ignore[union-attr]
    listed = [
        m
        for m in client.agents.messages.list(agent.id, order="asc")
        if m.message_type == "tool_return_message"
    ]
    assert [m.tool_return for m in listed][-1] == "ran on device"  # type: ignore[union-attr]


def test_archival_search_times_are_iso_8601_in_the_agents_timezone(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM, timezone="Europe/Paris")  # type: ignore[arg-type]
    client.agents.passages.create(agent.id, text="Ada takes tea at five")
    found = client.agents.passages.search(agent.id, query="tea")
    stamp = found.results[0].timestamp
    parsed = datetime.fromisoformat(stamp)
    assert parsed.utcoffset() is not None and stamp.endswith(("+01:00", "+02:00"))


def test_runs_filter_on_background_and_page_after_the_filter(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    for _ in range(3):
        stack.fake.reply("hi")
        client.agents.messages.create(agent.id, input="hello")
    stack.fake.reply("later")
    queued = client.agents.messages.create_async(agent.id, input="in the background")
    background = list(client.runs.list(background=True, agent_id=agent.id, limit=1))
    foreground = list(client.runs.list(background=False, agent_id=agent.id, limit=1))
    assert [r.id for r in background] == [queued.id]
    assert len(foreground) == 3 and all(not r.background for r in foreground)


def test_bad_bodies_are_422_naming_the_field_and_store_nothing(stack: Stack) -> None:
    client = stack.client()
    with pytest.raises(UnprocessableEntityError) as err:
        client.agents.create(llm_config=LLM, context_window_limit=3000)  # type: ignore[arg-type]
    assert "context_window_limit" in str(err.value.body)
    assert list(client.agents.list()) == []
    raw = httpx.post(
        f"{stack.url}/v1/agents/",
        content=b'{"llm_config": ',
        headers={"Authorization": f"Bearer {stack.key}", "Content-Type": "application/json"},
    )
    assert raw.status_code == 422 and "json" in raw.text.lower()
    with pytest.raises(APIStatusError) as bad_id:
        client.agents.retrieve("agent-nope")
    assert bad_id.value.status_code == 422 and "agent_id" in str(bad_id.value.body)
    assert list(client.agents.list()) == []


def test_openapi_describes_request_bodies_and_queries(stack: Stack) -> None:
    doc = httpx.get(f"{stack.url}/openapi.json").json()
    create = doc["paths"]["/v1/agents/"]["post"]
    assert "requestBody" in create
    schema_ref = create["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert schema_ref.endswith("/CreateAgent")
    listing = {p["name"] for p in doc["paths"]["/v1/agents/{agent_id}/tools"]["get"]["parameters"]}
    assert {"agent_id", "after", "before", "limit", "order"} <= listing


def test_text_postgres_cannot_hold_is_422_and_nothing_is_stored(stack: Stack) -> None:
    headers = {"Authorization": f"Bearer {stack.key}", "Content-Type": "application/json"}
    for bad in ('"a\\u0000b"', '"\\ud800"'):
        sent = httpx.post(
            f"{stack.url}/v1/agents/",
            content=f'{{"llm_config": {{"model": "m", "model_endpoint_type": "openai"}}, '
            f'"name": {bad}}}'.encode(),
            headers=headers,
            timeout=60,  # the first agent may load the local embedding model
        )
        assert sent.status_code == 422, sent.text
        assert "NUL" in sent.text or "name" in sent.text
    assert list(stack.client().agents.list()) == []


def test_message_edit_and_search_over_http(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("Paris is lovely in spring.")
    client.agents.messages.create(agent.id, input="Tell me about Paris")
    auth = {"Authorization": f"Bearer {stack.key}"}
    history = client.agents.messages.list(agent.id, order="asc").items
    said = next(m for m in history if m.message_type == "user_message")
    edited = httpx.patch(
        f"{stack.url}/v1/agents/{agent.id}/messages/{said.id}",
        json={"message_type": "user_message", "content": "Tell me about Lyon"},
        headers=auth,
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["content"] == "Tell me about Lyon"
    again = [m for m in client.agents.messages.list(agent.id, order="asc") if m.id == said.id]
    assert again[0].content == "Tell me about Lyon"  # type: ignore[union-attr]
    wrong = httpx.patch(
        f"{stack.url}/v1/agents/{agent.id}/messages/{said.id}",
        json={"message_type": "system_message", "content": "x"},
        headers=auth,
    )
    assert wrong.status_code == 422 and "role user" in wrong.text

    everywhere = httpx.post(
        f"{stack.url}/v1/messages/search", json={"query": "Lyon"}, headers=auth
    ).json()
    assert [(r["message_id"], r["agent_id"]) for r in everywhere] == [(said.id, agent.id)]
    assert (
        httpx.post(
            f"{stack.url}/v1/messages/search", json={"query": "Paris Tell"}, headers=auth
        ).json()
        == []
    )  # the edit replaced the searchable text
    one = httpx.post(
        f"{stack.url}/v1/agents/messages/search",
        json={"query": "spring", "agent_id": agent.id, "search_mode": "fts"},
        headers=auth,
    ).json()
    assert one[0]["message"]["role"] == "assistant" and one[0]["fts_rank"] == 1
    # the question it answered comes along, by its neighbour's words (store/search.py)
    assert [(r["message"]["role"], r["fts_rank"]) for r in one[1:]] == [("user", None)]


def test_preview_raw_payload_is_what_the_step_sends(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(
        llm_config=LLM,  # type: ignore[arg-type]
        memory_blocks=[{"label": "human", "value": "Name: Ada"}],
    )
    auth = {"Authorization": f"Bearer {stack.key}"}
    preview = httpx.post(
        f"{stack.url}/v1/agents/{agent.id}/messages/preview-raw-payload",
        json={"input": "hello there"},
        headers=auth,
    )
    assert preview.status_code == 200, preview.text
    assert stack.fake.requests == []  # nothing was sent to the model
    assert list(client.agents.messages.list(agent.id)) == list(
        client.agents.messages.list(agent.id)
    )
    stack.fake.reply("Hi Ada.")
    client.agents.messages.create(agent.id, input="hello there")
    sent = stack.fake.requests[0].body
    shown = preview.json()
    assert shown["model"] == sent["model"] == "gpt-test"
    assert [t["function"]["name"] for t in shown["tools"]] == [
        t["function"]["name"] for t in sent["tools"]
    ]
    assert shown["messages"][-1] == sent["messages"][-1]  # the user's packaged message
    assert "Name: Ada" in shown["messages"][0]["content"]


def test_summarize_compacts_the_context_now(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    for n in range(4):
        stack.fake.reply(f"answer {n}")
        client.agents.messages.create(agent.id, input=f"question {n}")
    before = client.agents.retrieve(agent.id).message_ids or []
    stack.fake.reply("Ada asked four questions and got four answers.")
    done = httpx.post(
        f"{stack.url}/v1/agents/{agent.id}/summarize",
        headers={"Authorization": f"Bearer {stack.key}"},
        timeout=30,
    )
    assert done.status_code == 204, done.text
    after = client.agents.retrieve(agent.id).message_ids or []
    assert after[0] == before[0] and len(after) < len(before)
    assert after[-1] == before[-1]  # the newest messages stay
    summary = client.agents.messages.list(agent.id, order="asc", limit=1000).items
    assert any("four questions" in str(getattr(m, "content", "")) for m in summary)
    runs = list(client.runs.list(agent_id=agent.id))
    assert runs[0].metadata["run_type"] == "summarize" and runs[0].stop_reason == "end_turn"  # type: ignore[index]


def test_deleting_a_run_keeps_its_messages_and_refuses_a_running_one(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("hello")
    client.agents.messages.create(agent.id, input="hi")
    run = next(iter(client.runs.list(agent_id=agent.id)))
    auth = {"Authorization": f"Bearer {stack.key}"}
    assert httpx.delete(f"{stack.url}/v1/runs/{run.id}", headers=auth).status_code == 200
    assert httpx.get(f"{stack.url}/v1/runs/{run.id}", headers=auth).status_code == 404
    kept = [getattr(m, "content", None) for m in client.agents.messages.list(agent.id)]
    assert "hi" in kept and "hello" in kept
    stack.fake.reply("slow", delay=2)
    going = client.agents.messages.create_async(agent.id, input="take your time")
    refused = httpx.delete(f"{stack.url}/v1/runs/{going.id}", headers=auth)
    assert refused.status_code == 409 and "cancel it" in refused.text


def test_base_tools_are_added_and_searchable(stack: Stack) -> None:
    auth = {"Authorization": f"Bearer {stack.key}"}
    added = httpx.post(f"{stack.url}/v1/tools/add-base-tools", headers=auth).json()
    assert {"memory_insert", "conversation_search", "send_message"} <= {t["name"] for t in added}
    # Letta's own descriptions (memory_insert's: "insert text at a specific location").
    found = stack.client().tools.search(query="specific location", tool_types=["letta_core"])
    assert found == []  # memory_insert is a letta_sleeptime_core tool, filtered out
    found = stack.client().tools.search(query="specific location")
    assert found[0].tool.name == "memory_insert" and found[0].fts_rank == 1


def test_all_messages_page_through_every_agent_in_one_order(stack: Stack) -> None:
    client = stack.client()
    for text in ("first", "second"):
        agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
        stack.fake.reply(f"re: {text}")
        client.agents.messages.create(agent.id, input=text)
    seen, after = [], None
    while page := client.messages.list(limit=1, order="asc", **({"after": after} if after else {})):
        seen += page
        after = page[-1].id
    texts = [getattr(m, "content", None) for m in seen]
    assert [t for t in texts if t in ("first", "re: first", "second", "re: second")] == [
        "first",
        "re: first",
        "second",
        "re: second",
    ]
    newest = client.messages.list(limit=1)  # desc by default
    assert newest[0].id == seen[-1].id


def test_step_feedback_transaction_metrics_and_traces(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack.runtime.engine.settings, "provider_traces", True)
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("", call("conversation_search", query="tea"))
    stack.fake.reply("Nothing yet.")
    client.agents.messages.create(agent.id, input="what about tea?")
    run = next(iter(client.runs.list(agent_id=agent.id)))
    steps = sorted(client.runs.steps.list(run.id), key=lambda s: s.id)
    traced = [client.steps.trace.retrieve(s.id) for s in steps]
    assert all(t is not None for t in traced)
    sent = [t.request_json for t in traced if t is not None]
    assert all(r["model"] == "gpt-test" and r["messages"] for r in sent)
    calls = [t.response_json.get("tool_calls") for t in traced if t is not None]
    assert any(c and c[0]["function"]["name"] == "conversation_search" for c in calls)

    step = steps[0]
    assert client.steps.feedback.create(step.id, feedback="negative").tags == []
    cleared = client.steps.feedback.create(step.id, tags=["retry"])
    assert (cleared.feedback, cleared.tags) == (None, ["retry"])  # Letta replaces feedback
    auth = {"Authorization": f"Bearer {stack.key}"}
    tx = httpx.patch(f"{stack.url}/v1/steps/{step.id}/transaction/tx-42", headers=auth)
    assert tx.status_code == 200 and tx.json()["tid"] == "tx-42"
    wrong = httpx.patch(
        f"{stack.url}/v1/steps/{step.id}/feedback", json={"feedback": "meh"}, headers=auth
    )
    assert wrong.status_code == 422 and "feedback" in wrong.text

    metrics = httpx.get(f"{stack.url}/v1/runs/{run.id}/metrics", headers=auth).json()
    tool_ids = {t.id for t in client.agents.tools.list(agent_id=agent.id)}
    assert metrics["num_steps"] == len(steps) >= 2
    assert len(metrics["tools_used"]) == 1 and set(metrics["tools_used"]) <= tool_ids
    assert metrics["run_ns"] > 0 and metrics["run_start_ns"] > 0


def test_generate_schema_reads_the_source_without_running_it(stack: Stack) -> None:
    auth = {"Authorization": f"Bearer {stack.key}"}
    code = (
        "def roll(sides: int, times: int = 1) -> str:\n"
        '    """Roll dice.\n\n    Args:\n        sides: Faces per die.\n'
        '        times: How many dice.\n    """\n'
        "    raise SystemExit('never run')\n"
    )
    got = httpx.post(f"{stack.url}/v1/tools/generate-schema", json={"code": code}, headers=auth)
    assert got.status_code == 200
    assert got.json()["parameters"]["required"] == ["sides"]
    assert got.json()["parameters"]["properties"]["times"]["description"] == "How many dice."
    bad = httpx.post(f"{stack.url}/v1/tools/generate-schema", json={"code": "x = 1"}, headers=auth)
    assert bad.status_code == 400 and "function" in bad.text


def test_an_approval_with_nothing_pending_is_letta_s_400(stack: Stack) -> None:
    """Letta answers 400 with its own words, which clients match on to recover."""
    from letta_client import BadRequestError

    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    with pytest.raises(BadRequestError) as err:
        client.agents.messages.create(
            agent.id,
            messages=[
                {  # type: ignore[list-item]
                    "type": "approval",
                    "approvals": [{"type": "approval", "tool_call_id": "call-x", "approve": True}],
                }
            ],
        )
    assert "No tool call is currently awaiting approval" in str(err.value.body)


def test_model_settings_are_the_models_and_change_what_is_sent(stack: Stack) -> None:
    """Letta fills model_settings (and llm_config.max_tokens) from the model at create, keeps
    them on update and applies settings a client sends to the model's calls."""
    client = stack.client()
    agent = client.agents.create(model="openai/gpt-fake-mini")
    settings = agent.api_model_settings.model_dump()  # type: ignore[union-attr]
    assert settings == {
        "max_output_tokens": 16384,
        "parallel_tool_calls": False,
        "provider_type": "openai",
        "temperature": 0.7,
        "reasoning": {"reasoning_effort": "minimal"},
        "response_format": None,
    }
    assert agent.llm_config.max_tokens == 16384
    renamed = client.agents.update(agent.id, name="kept")
    assert renamed.api_model_settings.model_dump() == settings  # type: ignore[union-attr]
    # Settings read and sent back change nothing: no effort for a model that has none.
    echoed = client.agents.update(agent.id, model_settings=settings)  # type: ignore[arg-type]
    assert echoed.llm_config.reasoning_effort is None
    changed = client.agents.update(
        agent.id,
        model_settings={  # type: ignore[arg-type]
            "provider_type": "openai",
            "temperature": 0.2,
            "max_output_tokens": 500,
        },
    )
    assert changed.llm_config.temperature == 0.2 and changed.llm_config.max_tokens == 500
    assert changed.api_model_settings.max_output_tokens == 500  # type: ignore[union-attr]
    stack.fake.reply("hello")
    client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "hi"}])
    sent = stack.fake.requests[-1].body
    # OpenAI's own API takes the limit as max_completion_tokens, as Letta's client sends it.
    assert sent["temperature"] == 0.2 and sent["max_completion_tokens"] == 500
    assert "reasoning_effort" not in sent and "max_tokens" not in sent

    # A letta_v1_agent on a model that thinks does by default (Letta's create applies
    # apply_reasoning_setting_to_config: reasoning on, a 1,024-token budget).
    claude = client.agents.create(model="anthropic/claude-sonnet-4-5")
    assert claude.api_model_settings.model_dump() == {  # type: ignore[union-attr]
        "max_output_tokens": 16384,
        "parallel_tool_calls": False,
        "provider_type": "anthropic",
        "temperature": 0.7,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "response_format": None,
        "verbosity": None,
        "effort": None,
    }
    thinking = client.agents.update(
        claude.id,
        model_settings={  # type: ignore[arg-type]
            "provider_type": "anthropic",
            "thinking": {"type": "enabled", "budget_tokens": 2048},
        },
    )
    assert thinking.llm_config.enable_reasoner and thinking.llm_config.max_reasoning_tokens == 2048


def test_the_model_is_asked_with_what_the_agent_shows(stack: Stack) -> None:
    """Each request carries the agent's settings as Letta 0.16.1's clients send them
    (build_request_data): the temperature it shows (0.7 when none was given), the frequency
    penalty when set, the token limit under the name the API takes, and `user`."""
    client = stack.client()
    agent = client.agents.create(
        llm_config={"model": "gpt-4.1", "model_endpoint_type": "openai", "context_window": 32000}  # type: ignore[arg-type]
    )
    assert agent.llm_config.temperature == 0.7
    stack.fake.reply("hello")
    client.agents.messages.create(agent.id, input="hi")
    sent = stack.fake.requests[-1].body
    assert sent["temperature"] == 0.7 and sent["user"] == stack.org_id
    assert "frequency_penalty" not in sent and "max_completion_tokens" not in sent
    config = {**agent.llm_config.model_dump(), "frequency_penalty": 0.5, "max_tokens": 300}
    client.agents.update(agent.id, llm_config=config)  # type: ignore[arg-type]
    stack.fake.reply("again")
    client.agents.messages.create(agent.id, input="hi")
    sent = stack.fake.requests[-1].body
    assert sent["frequency_penalty"] == 0.5 and sent["max_completion_tokens"] == 300
    # Claude thinks by default, as Letta creates it, so is asked at 1.0 (Anthropic's only
    # temperature with thinking); created with reasoning off it is asked at the one it shows.
    claude = client.agents.create(model="anthropic/claude-sonnet-4-5")
    stack.fake.reply("hi from claude")
    client.agents.messages.create(claude.id, input="hi")
    sent = stack.fake.requests[-1].body
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert sent["temperature"] == 1.0 and sent["max_tokens"] == 16384
    plain = client.agents.create(model="anthropic/claude-sonnet-4-5", reasoning=False)
    assert not plain.llm_config.enable_reasoner
    stack.fake.reply("hi from claude")
    client.agents.messages.create(plain.id, input="hi")
    sent = stack.fake.requests[-1].body
    assert sent["temperature"] == 0.7 and sent["max_tokens"] == 16384 and "thinking" not in sent


def test_settings_cairn_cannot_send_are_refused_by_name(stack: Stack) -> None:
    auth = {"Authorization": f"Bearer {stack.key}"}
    body = {
        "model": "openai/gpt-fake-mini",
        "model_settings": {"provider_type": "openai", "response_format": {"type": "json_object"}},
    }
    refused = httpx.post(f"{stack.url}/v1/agents/", json=body, headers=auth)
    assert refused.status_code == 400 and "model_settings.response_format" in refused.text
    assert httpx.get(f"{stack.url}/v1/agents/", headers=auth).json() == []


def test_a_model_whose_provider_has_no_key_is_refused_at_create(stack: Stack) -> None:
    """Letta refuses it at create, naming the provider; not at the first send with a 401."""
    from letta_client import BadRequestError

    client = stack.client()
    with pytest.raises(BadRequestError) as err:
        client.agents.create(model="google_ai/gemini-2.5-flash")
    assert "Provider google_ai is not supported" in str(err.value.body)
    # and what a newcomer does about it: the key to set, or the organization's own
    assert "set GEMINI_API_KEY" in str(err.value.body)
    assert "POST /v1/providers/" in str(err.value.body)
    assert "openai, anthropic" in str(err.value.body)
    assert client.agents.list().items == []


def test_a_block_attached_to_a_sleeptime_primary_reaches_its_sleeptime_agent(
    stack: Stack,
) -> None:
    client = stack.client()
    primary = client.agents.create(llm_config=LLM, enable_sleeptime=True)  # type: ignore[arg-type]
    group = client.agents.retrieve(primary.id).multi_agent_group
    assert group is not None
    (helper_id,) = group.agent_ids
    notes = client.blocks.create(label="notes", value="tea at four")
    client.agents.blocks.attach(notes.id, agent_id=primary.id)
    helper_labels = [b.label for b in client.agents.blocks.list(helper_id)]
    assert "notes" in helper_labels and helper_labels.count("memory_persona") == 1
    # Detaching is the primary's alone, as in Letta.
    client.agents.blocks.detach(notes.id, agent_id=primary.id)
    assert "notes" in [b.label for b in client.agents.blocks.list(helper_id)]
    assert "notes" not in [b.label for b in client.agents.blocks.list(primary.id)]


def test_a_sleeptime_agent_with_sleeptime_and_a_persona_is_created(stack: Stack) -> None:
    """Letta answers 200; the helper shares the agent's memory_persona instead of a second."""
    client = stack.client()
    agent = client.agents.create(
        llm_config=LLM,
        agent_type="sleeptime_agent",
        enable_sleeptime=True,  # type: ignore[arg-type]
        memory_blocks=[{"label": "memory_persona", "value": "I keep notes."}],
    )
    group = client.agents.retrieve(agent.id).multi_agent_group
    assert group is not None
    (helper_id,) = group.agent_ids
    personas = [b for b in client.agents.blocks.list(helper_id) if b.label == "memory_persona"]
    assert [p.value for p in personas] == ["I keep notes."]


def test_reasoning_follows_letta_s_policy_at_create_and_update(stack: Stack) -> None:
    """Letta 0.16.1's apply_reasoning_setting_to_config, at create and on an update with
    `reasoning` (cairn/llm/reasoning.py): what each agent type and model ends up with."""
    client = stack.client()
    gpt = {"model": "gpt-4o-mini", "model_endpoint_type": "openai", "context_window": 32000}
    # A letta_v1_agent on a model that cannot think does not, whatever is asked.
    plain = client.agents.create(llm_config=gpt, reasoning=True)  # type: ignore[arg-type]
    assert not plain.llm_config.enable_reasoner
    assert not plain.llm_config.put_inner_thoughts_in_kwargs
    # A memgpt_v2_agent on the same model thinks in its calls (Letta's LLMConfig default).
    v2 = client.agents.create(agent_type="memgpt_v2_agent", llm_config=gpt)  # type: ignore[arg-type]
    assert v2.llm_config.enable_reasoner and v2.llm_config.put_inner_thoughts_in_kwargs
    # Claude: off when created so, on again by an update, with Letta's 1,024-token budget.
    claude = client.agents.create(model="anthropic/claude-sonnet-4-5", reasoning=False)
    assert not claude.llm_config.enable_reasoner
    on = client.agents.update(claude.id, reasoning=True)
    assert on.llm_config.enable_reasoner and on.llm_config.max_reasoning_tokens == 1024
    assert not on.llm_config.put_inner_thoughts_in_kwargs
    # OpenAI's reasoning models always reason (GPT-5 at minimal effort unless told).
    five = {**gpt, "model": "gpt-5-mini"}
    reasoner = client.agents.create(llm_config=five, reasoning=False)  # type: ignore[arg-type]
    assert reasoner.llm_config.enable_reasoner
    assert reasoner.llm_config.reasoning_effort == "minimal"
