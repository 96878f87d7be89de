"""Executing one response's tool calls: parallel-safe ones together, results in call order."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Any

from cairn.domain import Block
from cairn.domain.ids import new_id
from cairn.domain.messages import FunctionCall, ToolCall
from cairn.memory.edits import CoreMemory
from cairn.run.backends import calls
from cairn.tools.registry import BUILTIN_TOOLS
from cairn.tools.rules import ToolRulesSolver

ORG = new_id("org")
NOW = datetime(2026, 11, 22, tzinfo=UTC)


class MeetingContext:
    """Searches that only finish when two of them run at the same time."""

    def __init__(self) -> None:
        self.memory = CoreMemory.of(ORG, [Block(organization_id=ORG, label="human", value="A")])
        self.barrier = threading.Barrier(2, timeout=5)

    def conversation_search(self, query: str, **_: Any) -> dict[str, Any]:
        self.barrier.wait()  # raises BrokenBarrierError if the other search is not running
        return {"message": f"searched {query}", "results": []}


def tool_call(n: int, name: str, **args: Any) -> ToolCall:
    return ToolCall(id=f"call_{n}", function=FunctionCall(name=name, arguments=json.dumps(args)))


def test_parallel_safe_calls_run_together_and_results_keep_call_order() -> None:
    tools = [BUILTIN_TOOLS[n].as_tool(ORG) for n in ("conversation_search", "core_memory_append")]
    requested = [
        tool_call(1, "conversation_search", query="first"),
        tool_call(2, "core_memory_append", label="human", content="B"),
        tool_call(3, "conversation_search", query="second"),
    ]
    prepared = calls.prepare(
        requested,
        tools=tools,
        allowed=[t.name for t in tools],
        solver=ToolRulesSolver(),
        history=[],
    )
    ctx = MeetingContext()
    results = calls.execute(
        prepared,
        ctx,
        now=NOW,
        timezone="UTC",
        journaled={},  # type: ignore[arg-type]
        write_journal=lambda key, payload: None,
    )
    assert [r.call.id for r in results] == ["call_1", "call_2", "call_3"]
    assert all(r.success for r in results), [r.func_response for r in results]
    messages = [json.loads(r.func_response)["message"] for r in results]
    # structured results reach the model as JSON objects, not escaped strings
    assert (
        messages[0]["message"] == "searched first" and messages[2]["message"] == "searched second"
    )
    assert ctx.memory.blocks["human"].value == "A\nB"
