"""The tool calls of one model response: checked against the rules, then executed.

A call the model got wrong (unknown tool, arguments that are not JSON or do not fit the
schema) becomes an error result the model can read, and the turn goes on, as in Letta.
Only a prefilled-argument conflict, which the model cannot fix, stops the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cairn import faults, tracing
from cairn.domain.messages import ToolCall, ToolReturn
from cairn.domain.tools import Tool
from cairn.memory import packaging
from cairn.memory.edits import MemoryEditError
from cairn.tools.context import ToolContext, calling
from cairn.tools.registry import BUILTIN_TOOLS, ToolSpec
from cairn.tools.rules import ToolRulesSolver
from cairn.tools.schema import ToolArgumentError, split_runtime_arguments

# Built-in tools keep their effects inside the step (memory edits, passages to insert, an
# async message to another agent) or only read, so a retry simply runs them again and the
# checkpoint writes the effects once. A tool with effects outside the checkpoint (custom code,
# MCP calls, another agent's turn waited for) is journaled and runs once.


@dataclass
class PreparedCall:
    call: ToolCall
    tool: Tool | None
    spec: ToolSpec | None
    args: dict[str, Any]
    error: str | None = None  # set when the call cannot run; becomes its error result
    request_heartbeat: bool | None = None
    thinking: str | None = None
    needs_approval: bool = False

    @property
    def name(self) -> str:
        return self.call.function.name


@dataclass
class CallResult:
    call: ToolCall
    success: bool
    func_response: str  # the packaged return, as stored and sent to the model
    stdout: list[str] | None = None
    stderr: list[str] | None = None

    def tool_return(self) -> ToolReturn:
        return ToolReturn(
            tool_call_id=self.call.id,
            status="success" if self.success else "error",
            func_response=self.func_response,
            stdout=self.stdout,
            stderr=self.stderr,
        )


def prepare(
    calls: list[ToolCall],
    *,
    tools: list[Tool],
    allowed: list[str],
    solver: ToolRulesSolver,
    history: list[str],
) -> list[PreparedCall]:
    """Parse and check every call; raises ToolRuleViolation for a prefilled-args conflict."""
    by_name = {t.name: t for t in tools}
    prepared: list[PreparedCall] = []
    seen = list(history)
    for call in calls:
        name = call.function.name
        tool = by_name.get(name)
        spec = BUILTIN_TOOLS.get(name) if tool is not None and tool.tool_type != "custom" else None
        item = PreparedCall(call, tool, spec, {})
        prepared.append(item)
        if tool is None or name not in allowed:
            choices = ", ".join(allowed) or "none"
            item.error = f"Tool `{name}` is not available at this point (available: {choices})."
            continue
        try:
            raw = json.loads(call.function.arguments or "{}")
        except ValueError as err:
            item.error = (
                f"The arguments to `{name}` are not valid JSON ({err}). Send a JSON object."
            )
            continue
        if not isinstance(raw, dict):
            item.error = f"The arguments to `{name}` must be a JSON object."
            continue
        own, item.request_heartbeat, item.thinking = split_runtime_arguments(raw)
        item.args = solver.merge_prefilled(name, own, tool.json_schema, seen)
        item.needs_approval = solver.requires_approval(name, default=tool.default_requires_approval)
        seen.append(name)
    return prepared


def execute(
    prepared: list[PreparedCall],
    ctx: ToolContext,
    *,
    now: datetime,
    timezone: str,
    journaled: dict[str, dict[str, Any]],
    write_journal: Callable[[str, dict[str, Any]], None],
) -> list[CallResult]:
    """Run the calls: parallel-safe ones together, the rest in order; results in call order."""

    step_context = tracing.current_context()  # the pool's threads start with none

    def run(item: PreparedCall) -> CallResult:
        key = f"tool:{item.call.id}"
        if key in journaled:
            done = journaled[key]
        else:
            with (
                tracing.within(step_context),
                tracing.span(
                    f"execute_tool {item.name}",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": item.name,
                        "gen_ai.tool.call.id": item.call.id,
                        "gen_ai.tool.type": "extension"  # an MCP server's
                        if item.tool is not None and item.tool.tool_type == "external_mcp"
                        else "function",
                    },
                ) as span,
            ):
                done = _invoke(item, ctx)
                if not done["success"]:
                    tracing.failed(span, str(done["result"]))
            outside = item.spec is None or item.spec.journaled
            if outside and item.tool is not None and item.error is None:
                write_journal(key, done)  # outside effects: this call never runs twice
        output = str(done["result"])
        limit = item.tool.return_char_limit if item.tool else len(output)
        text = packaging.tool_return(
            _structured(output, limit), success=done["success"], now=now, timezone=timezone
        )
        cut = (
            [s[:limit] for s in done.get("stdout") or ()],
            [s[:limit] for s in done.get("stderr") or ()],
        )
        return CallResult(item.call, bool(done["success"]), text, cut[0] or None, cut[1] or None)

    results: dict[str, CallResult] = {}
    together = [p for p in prepared if p.spec and p.spec.enable_parallel_execution and not p.error]
    if len(together) > 1:
        with ThreadPoolExecutor(max_workers=min(len(together), 4)) as pool:
            for item, result in zip(together, pool.map(run, together), strict=True):
                results[item.call.id] = result
    in_order = [p for p in prepared if p.call.id not in results]
    for n, item in enumerate(in_order):
        results[item.call.id] = run(item)
        if n < len(in_order) - 1:
            faults.reached("between_tools")
    return [results[p.call.id] for p in prepared]


def _invoke(item: PreparedCall, ctx: ToolContext) -> dict[str, Any]:
    """Run one call: {"success", "result", "stdout"?, "stderr"?}, as journaled."""
    if item.error is not None:
        return {"success": False, "result": item.error}
    if item.spec is None:
        return _custom(item, ctx)
    try:
        with calling(item.call.id):
            output = item.spec.call(ctx, item.args)
    except (MemoryEditError, ToolArgumentError) as err:
        return {"success": False, "result": str(err)}
    except Exception as err:  # a tool's own bug must not end the run; the model sees it
        return {"success": False, "result": f"{type(err).__name__}: {err}"}
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return {"success": True, "result": text}


def _custom(item: PreparedCall, ctx: ToolContext) -> dict[str, Any]:
    tool = item.tool
    if tool is not None and tool.tool_type == "external_mcp":
        return ctx.run_external_tool(tool, item.args)
    if tool is None or not tool.source_code:
        return {"success": False, "result": f"Tool `{item.name}` has no source code to run."}
    problem = _check_arguments(tool, item.args)
    if problem:
        return {"success": False, "result": problem}
    done = ctx.run_custom_tool(tool, item.args, item.call.id)
    return {
        "success": done.success,
        "result": done.value,
        "stdout": done.stdout,
        "stderr": done.stderr,
    }


def _check_arguments(tool: Tool, args: dict[str, Any]) -> str | None:
    parameters = tool.json_schema.get("parameters") or {}
    known = set(parameters.get("properties") or {})
    unknown = sorted(set(args) - known)
    missing = [n for n in parameters.get("required") or () if n not in args]
    if unknown or missing:
        parts = [f"unknown {unknown}"] if unknown else []
        parts += [f"missing {missing}"] if missing else []
        return f"Invalid arguments to `{tool.name}`: {', '.join(parts)}."
    return None


def _structured(output: str, limit: int) -> Any:
    """A result that is a JSON object or list goes back as one, not as an escaped string."""
    if len(output) <= limit and output[:1] in ("{", "["):
        try:
            return json.loads(output)
        except ValueError:
            pass
    return output[:limit]
