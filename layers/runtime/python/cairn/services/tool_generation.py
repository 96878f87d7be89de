"""A tool written by a model from a prompt (Letta's POST /v1/tools/generate-tool).

As Letta does it: one call to the model the handle names (Letta's default `openai/gpt-4.1`),
with Letta's system prompt for tool writing, its acknowledgement, and a `generate_tool` tool
the model fills in with the source, sample arguments and pip requirements. The tool's schema
is read from the source as a created tool's is; the tool is returned, not stored.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from cairn.domain.messages import Message, TextContent
from cairn.domain.tools import Tool
from cairn.errors import InvalidArgumentError
from cairn.llm import deadline
from cairn.llm.types import LLMError, LLMRequest
from cairn.prices import step_cost
from cairn.run.runtime import Runtime
from cairn.services import limits, tools
from cairn.services.providers import resolve_handle
from cairn.services.requests import GenerateToolInput, ToolCreate

# The messages of a call for no agent (the providers' clients read only role and content).
NO_AGENT = "agent-00000000-0000-4000-8000-000000000000"
DEFAULT_HANDLE = "openai/gpt-4.1"  # Letta's DEFAULT_GENERATE_TOOL_MODEL_HANDLE
ACK = (
    "Understood, I will respond with generated python source code and sample arguments that "
    "can be used to test the functionality once I receive the user prompt. I'm ready."
)
TOOL = {
    "name": "generate_tool",
    "description": "This method generates the raw source code for a custom tool that can be "
    "attached to and agent for llm invocation.",
    "parameters": {
        "type": "object",
        "properties": {
            "raw_source_code": {
                "type": "string",
                "description": "The raw python source code of the custom tool.",
            },
            "sample_args_json": {
                "type": "string",
                "description": "The JSON dict that contains sample args for a test run of the "
                "python function. Key is the name of the function parameter and value is an "
                "example argument that is passed in.",
            },
            "pip_requirements_json": {
                "type": "string",
                "description": "Optional JSON dict that contains pip packages to be installed "
                "if needed by the source code. Key is the name of the pip package and value "
                "is the version number.",
            },
        },
        "required": ["raw_source_code", "sample_args_json", "pip_requirements_json"],
    },
}


class Generated(NamedTuple):
    tool: Tool
    sample_args: dict[str, Any]
    response: str


@cache
def system_prompt() -> str:
    """Letta's `memgpt_generate_tool` system prompt, word for word."""
    return Path(__file__).with_name("tool_generation_prompt.txt").read_text().strip()


def ask(req: GenerateToolInput) -> str:
    """The user message, as Letta words it."""
    return (
        f"Generate a python function named {req.tool_name} using the instructions below "
        + (
            f"based on this starter code: \n\n```\n{req.starter_code}\n```\n\n"
            if req.starter_code
            else "\n"
        )
        + (
            f"Note the following validation errors: \n{' '.join(req.validation_errors)}\n\n"
            if req.validation_errors
            else "\n"
        )
        + f"Instructions: {req.prompt}"
    )


def generate(rt: Runtime, org: str, req: GenerateToolInput) -> Generated:
    limits.ensure_budget(rt.db, org)  # a model call, if not a step: refused once it is spent
    config = resolve_handle(rt, org, req.handle or DEFAULT_HANDLE)
    said = [("system", system_prompt()), ("assistant", ACK), ("user", ask(req))]
    messages = [
        Message(organization_id=org, agent_id=NO_AGENT, role=role, content=[TextContent(text=text)])
        for role, text in said
    ]
    request = LLMRequest(config=config, messages=messages, tools=[TOOL], user=org)
    client = rt.engine.model().client(org, config)
    with rt.yielding(), deadline.bounded(rt.settings.llm_timeout_seconds):
        answer = deadline.retried(lambda: client.complete(request), rt.settings.llm_max_retries)
    # Counted whatever it answered: the tokens were spent (the budgets read the month).
    used = answer.usage.step_fields()
    limits.spend(
        rt.db,
        org,
        config.model,
        used["prompt_tokens"],
        used["completion_tokens"],
        step_cost(config.model, used, rt.settings.prices),
    )
    failed = f"Failed to generate tool '{req.tool_name}'"
    if not answer.tool_calls:
        said_instead = answer.text or "No response from LLM"
        raise LLMError(
            "server", f"{failed}: LLM did not return a tool call. Response: {said_instead}"
        )
    output = _arguments(answer.tool_calls[0].function.arguments, failed)
    try:
        tool = tools.from_source(
            ToolCreate(
                source_code=output["raw_source_code"],
                pip_requirements=[
                    {"name": name, "version": version or None}
                    for name, version in output["pip_requirements"].items()
                ],
            ),
            org,
        )
    except InvalidArgumentError as err:
        raise InvalidArgumentError(
            f"tool_name: Failed to generate JSON schema for tool '{req.tool_name}': {err}"
        ) from None
    if tool.name != req.tool_name:
        raise LLMError("server", f"{failed}: the model named its function `{tool.name}`")
    return Generated(tool, output["sample_args"], answer.text)


def _arguments(raw: str, failed: str) -> dict[str, Any]:
    """The call's arguments, each JSON string opened: a model's malformed answer is the
    model's failure (502), said with what was wrong."""
    try:
        args = json.loads(raw)
        source = args["raw_source_code"]
        sample = json.loads(args["sample_args_json"])
        pips = json.loads(args.get("pip_requirements_json") or "{}")
    except (ValueError, KeyError, TypeError) as err:
        raise LLMError("server", f"{failed}: the model's answer is malformed: {err}") from None
    if not isinstance(source, str) or not isinstance(sample, dict) or not isinstance(pips, dict):
        raise LLMError("server", f"{failed}: the model's answer has the wrong types")
    return {"raw_source_code": source, "sample_args": sample, "pip_requirements": pips}
