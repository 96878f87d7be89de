"""Custom tools from source through the whole API with letta-client, run in the sandbox."""

from __future__ import annotations

import ast
import json

import httpx
import pytest
from letta_client import APIStatusError

from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}

SECRET = '''
def secret(x: str) -> str:
    """Return the secret form of x.

    Args:
        x: The text to wrap.
    """
    return "secret:" + x
'''
RAISES = '''
def broken(x: int) -> int:
    """Always fails.

    Args:
        x: Ignored.
    """
    raise RuntimeError("tool blew up")
'''
SLEEPS = '''
import time

def slow() -> str:
    """Takes too long."""
    time.sleep(30)
    return "late"
'''
SNOOPS = '''
def snoop() -> str:
    """Reads the environment."""
    import json, os
    return json.dumps({k: os.environ[k] for k in sorted(os.environ)})
'''
CHATTY = '''
def chatty() -> str:
    """Prints a lot."""
    print("x" * 100_000)
    return "y" * 100_000
'''


def agent_with(stack: Stack, *sources: str, limit: int | None = None):  # type: ignore[no-untyped-def]
    client = stack.client()
    tool_ids = []
    for source in sources:
        extra = {"return_char_limit": limit} if limit else {}
        tool_ids.append(client.tools.create(source_code=source, **extra).id)  # type: ignore[arg-type]
    agent = client.agents.create(llm_config=LLM, tool_ids=tool_ids)  # type: ignore[arg-type]
    return client, agent


def tool_return(response) -> object:  # type: ignore[no-untyped-def]
    return next(m for m in response.messages if m.message_type == "tool_return_message")


def test_a_tool_from_source_returns_through_the_whole_api(stack: Stack) -> None:
    client, agent = agent_with(stack, SECRET)
    tool = client.tools.list(name="secret").items[0]  # type: ignore[attr-defined]
    assert tool.json_schema["parameters"]["required"] == ["x"] and tool.tool_type == "custom"
    stack.fake.reply("", call("secret", x="abc"))
    stack.fake.reply("done")
    response = client.agents.messages.create(agent.id, input="wrap abc")
    ret = tool_return(response)
    # Letta shows the tool's own return, not the envelope the model reads (contract §3.3).
    assert ret.status == "success" and ret.tool_return == "secret:abc"  # type: ignore[attr-defined]
    assert ret.tool_returns[0].tool_return == "secret:abc"  # type: ignore[attr-defined]
    assert json.loads(stack.fake.requests[1].last_text())["message"] == "secret:abc"
    assert "secret" in stack.fake.requests[0].tool_names


def test_upsert_by_name_keeps_the_id(stack: Stack) -> None:
    client = stack.client()
    first = client.tools.create(source_code=SECRET)
    second = client.tools.upsert(source_code=SECRET.replace('"secret:"', '"s:"'))
    assert first.id == second.id and '"s:"' in (second.source_code or "")


def test_a_tool_that_raises_is_a_failed_return_not_a_crashed_step(stack: Stack) -> None:
    client, agent = agent_with(stack, RAISES)
    stack.fake.reply("", call("broken", x=1))
    stack.fake.reply("it failed")
    response = client.agents.messages.create(agent.id, input="go")
    ret = tool_return(response)
    assert ret.status == "error" and "RuntimeError: tool blew up" in ret.tool_return  # type: ignore[attr-defined]
    assert response.stop_reason.stop_reason == "end_turn"


def test_a_tool_past_its_timeout_comes_back_as_an_error(db: Database) -> None:
    with make_stack(db, tool_timeout_seconds=1) as stack:
        client, agent = agent_with(stack, SLEEPS)
        stack.fake.reply("", call("slow"))
        stack.fake.reply("too slow")
        ret = tool_return(client.agents.messages.create(agent.id, input="go"))
    assert ret.status == "error" and "longer than 1 s" in ret.tool_return  # type: ignore[attr-defined]


def test_a_tool_sees_none_of_the_servers_environment(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_TEST_SECRET", "hunter2")
    client, agent = agent_with(stack, SNOOPS)
    stack.fake.reply("", call("snoop"))
    stack.fake.reply("ok")
    ret = tool_return(client.agents.messages.create(agent.id, input="go"))
    seen = ast.literal_eval(ret.tool_return)  # type: ignore[attr-defined]  # str() of a dict, as Letta
    assert "CAIRN_TEST_SECRET" not in seen and "OPENAI_API_KEY" not in seen
    assert set(seen) <= {"PATH", "LANG", "HOME", "TMPDIR", "CAIRN_TOOL_CALL_ID", "LC_CTYPE"}


def test_output_is_cut_to_the_return_char_limit(stack: Stack) -> None:
    client, agent = agent_with(stack, CHATTY, limit=100)
    stack.fake.reply("", call("chatty"))
    stack.fake.reply("ok")
    ret = tool_return(client.agents.messages.create(agent.id, input="go"))
    assert ret.tool_return == "y" * 100  # type: ignore[attr-defined]
    assert len(ret.stdout[0]) == 100  # type: ignore[attr-defined]


def test_sources_without_a_docstring_or_types_are_400(stack: Stack) -> None:
    client = stack.client()
    with pytest.raises(APIStatusError) as err:
        client.tools.create(source_code="def f(x: int):\n    return x")
    assert err.value.status_code == 400 and "no docstring" in str(err.value.body)
    with pytest.raises(APIStatusError) as untyped:
        client.tools.create(source_code='def f(x):\n    """Doc."""')
    assert untyped.value.status_code == 400


def test_tool_rules_can_name_custom_tools(stack: Stack) -> None:
    client = stack.client()
    tool = client.tools.create(source_code=SECRET)
    agent = client.agents.create(
        llm_config=LLM,
        tool_ids=[tool.id],  # type: ignore[arg-type]
        tool_rules=[{"type": "exit_loop", "tool_name": "secret"}],
    )  # type: ignore[list-item]
    stack.fake.reply("", call("secret", x="q"))
    response = client.agents.messages.create(agent.id, input="go")
    assert response.stop_reason.stop_reason == "end_turn" and len(stack.fake.requests) == 1


STATEFUL = '''
def whoami(agent_state: "AgentState") -> str:
    """Names the agent and what it remembers of the human."""
    return agent_state.name + " knows " + agent_state.memory.get_block("human").value
'''


def test_a_tool_declaring_agent_state_receives_it(stack: Stack) -> None:
    client = stack.client()
    tool = client.tools.create(source_code=STATEFUL)
    assert tool.json_schema["parameters"]["properties"] == {}
    agent = client.agents.create(
        name="sam",
        llm_config=LLM,
        tool_ids=[tool.id],  # type: ignore[arg-type]
        memory_blocks=[{"label": "human", "value": "Ada"}],
    )  # type: ignore[list-item]
    stack.fake.reply("", call("whoami"))
    stack.fake.reply("ok")
    ret = tool_return(client.agents.messages.create(agent.id, input="who?"))
    assert ret.tool_return == "sam knows Ada"  # type: ignore[attr-defined]


def test_a_supplied_json_schema_is_used_as_is(stack: Stack) -> None:
    client = stack.client()
    schema = {
        "name": "secret",
        "description": "Wraps.",
        "parameters": {
            "type": "object",
            "properties": {"x": {"type": "string"}},
            "required": ["x"],
        },
    }
    tool = client.tools.create(
        source_code=SECRET,
        json_schema=schema,
        default_requires_approval=True,
        enable_parallel_execution=True,
        pip_requirements=[{"name": "requests"}],
    )  # type: ignore[list-item]
    assert tool.json_schema == schema and tool.default_requires_approval
    assert tool.enable_parallel_execution and tool.pip_requirements[0].name == "requests"  # type: ignore[index]
    with pytest.raises(APIStatusError) as err:
        client.tools.create(source_code=SECRET, json_schema={**schema, "name": "other"})
    assert err.value.status_code == 400 and "no top-level function" in str(err.value.body)


def test_a_supplied_schema_without_required_or_properties_runs(stack: Stack) -> None:
    """A custom tool's own json_schema that leaves out `required` (and `properties`): its
    call once broke every turn of the agent (a KeyError, a 500, failed runs)."""
    client = stack.client()
    source = 'def ping() -> str:\n    """Answer pong."""\n    return "pong"\n'
    schema = {"name": "ping", "description": "Answer pong.", "parameters": {"type": "object"}}
    tool = client.tools.create(source_code=source, json_schema=schema)
    agent = client.agents.create(llm_config=LLM, tool_ids=[tool.id])  # type: ignore[arg-type]
    stack.fake.reply("", call("ping"))
    stack.fake.reply("done")
    ret = tool_return(client.agents.messages.create(agent.id, input="ping"))
    assert ret.status == "success" and ret.tool_return == "pong"  # type: ignore[attr-defined]
    sent = {
        t["function"]["name"]: t["function"]["parameters"]
        for t in stack.fake.requests[0].body["tools"]
    }
    assert sent["ping"]["properties"] == {} and sent["ping"]["required"] == []


ENVIRONMENT = '''
def environment(name: str) -> str:
    """Read a variable of the environment.

    Args:
        name: The variable.
    """
    import os

    return str(os.environ.get(name))
'''


def test_a_tool_run_from_source_gets_the_env_vars_it_is_given(stack: Stack) -> None:
    """Letta's POST /v1/tools/run passes `env_vars` to the sandbox; the sandbox's own
    variables stay its own."""
    auth = {"Authorization": f"Bearer {stack.key}"}

    def run(name: str, env_vars: dict[str, str]) -> httpx.Response:
        body = {"source_code": ENVIRONMENT, "args": {"name": name}, "env_vars": env_vars}
        return httpx.post(f"{stack.url}/v1/tools/run", json=body, headers=auth, timeout=60)

    ran = run("GREETING", {"GREETING": "hello", "PATH": "/evil"})
    assert ran.status_code == 200 and ran.json()["tool_return"] == "hello", ran.text
    assert run("PATH", {"PATH": "/evil"}).json()["tool_return"] == "/usr/bin:/bin"
    assert run("GREETING", {}).json()["tool_return"] == "None"
    bad = run("X", {"1 BAD": "x"})
    assert bad.status_code in (400, 422) and "env_vars" in bad.text and "1 BAD" in bad.text
