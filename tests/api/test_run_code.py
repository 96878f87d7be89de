"""Letta's run_code and run_code_with_tools built-ins, in Cairn's tool sandbox (Python only):
the last expression's value, the output and the errors, as Letta's run_code answers."""

from __future__ import annotations

import ast
from typing import Any

from tests.api.conftest import Stack
from tests.api.test_custom_tools import SECRET, tool_return
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def shown_of(text: str) -> Any:
    """The JSON the tool answered, as a client sees a structured return: str() of it."""
    return ast.literal_eval(text)


def ran(stack: Stack, tool: str, code: str, language: str = "python", **extra: Any) -> Any:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM, tools=[tool], **extra)  # type: ignore[arg-type]
    # As Letta: run_code_with_tools runs Python and takes no language.
    args = {"code": code} if tool == "run_code_with_tools" else {"code": code, "language": language}
    stack.fake.reply("", call(tool, **args))
    stack.fake.reply("ran")
    return tool_return(client.agents.messages.create(agent.id, input="run it"))


def test_the_last_value_and_the_output_come_back(stack: Stack) -> None:
    ret = ran(stack, "run_code", "import math\nprint('hello')\nmath.factorial(5)")
    assert ret.status == "success"
    shown = shown_of(ret.tool_return)
    assert shown["results"] == ["120"] and shown["logs"]["stdout"] == ["hello\n"]
    assert "error" not in shown


def test_an_error_is_shown_and_other_languages_are_refused(stack: Stack) -> None:
    failed = shown_of(ran(stack, "run_code", "1 / 0").tool_return)
    assert failed["results"] == [] and "ZeroDivisionError" in failed["error"]
    other = ran(stack, "run_code", "console.log(1)", language="js")
    assert other.status == "error" and "runs Python" in other.tool_return


def test_run_code_with_tools_has_the_agents_own_tools_defined(stack: Stack) -> None:
    tool = stack.client().tools.create(source_code=SECRET)
    ret = ran(stack, "run_code_with_tools", "secret('abc') + '!'", tool_ids=[tool.id])
    assert shown_of(ret.tool_return)["results"] == ["'secret:abc!'"]


def test_run_code_with_tools_has_the_agents_secrets_and_run_code_has_none(stack: Stack) -> None:
    """As Letta's E2B runs: run_code_with_tools gets the agent's environment variables and
    LETTA_AGENT_ID (the tools it defines need them); run_code gets neither."""
    code = "import os\n[os.environ.get('API_TOKEN'), os.environ.get('LETTA_AGENT_ID')]"
    tool = stack.client().tools.create(source_code=SECRET)
    secrets = {"API_TOKEN": "tok-123456"}
    ret = ran(stack, "run_code_with_tools", code, tool_ids=[tool.id], secrets=secrets)
    token, agent_id = ast.literal_eval(shown_of(ret.tool_return)["results"][0])
    assert token == "tok-123456" and agent_id.startswith("agent-")
    bare = ran(stack, "run_code", code, secrets=secrets)
    assert shown_of(bare.tool_return)["results"] == ["[None, None]"]
