"""An answer to an approval request: approved calls run, denied ones return the person's
reason as an error, a client's own result is taken as the tool's return; no model call."""

from __future__ import annotations

from cairn.domain.messages import Message
from cairn.engine import calls
from cairn.engine.prompt import refreshed_system
from cairn.engine.turn import Turn
from cairn.memory import packaging
from cairn.memory.edits import CoreMemory
from cairn.store.checkpoints import Checkpoint
from cairn.tools.rules import ToolRuleViolation


def pending_approval(last: Message | None) -> Message | None:
    if last is not None and last.role == "approval" and last.tool_calls:
        return last
    return None


def approval_step(turn: Turn) -> Checkpoint:
    """Answer the pending approval: run approved calls, refuse denied ones, no LLM call."""
    turn.step = turn.step.model_copy(update={"kind": "approval"})
    pending = pending_approval(turn.state.context[-1] if turn.state.context else None)
    response = turn.inputs[-1]
    if pending is None:
        return turn.failed("invalid_tool_call", "no tool call is waiting for approval")
    decisions = {d.tool_call_id: d for d in response.approvals or ()}
    tool_calls = list(pending.tool_calls or ())
    missing = [c.id for c in tool_calls if c.id not in decisions]
    if missing:
        return turn.failed("invalid_tool_call", f"no decision for tool calls {missing}")
    memory = CoreMemory.of(turn.state.org_id, turn.state.blocks)
    solver, history = turn.solver, turn.state.tool_history()
    try:
        prepared = calls.prepare(
            tool_calls,
            tools=turn.state.tools,
            allowed=[t.name for t in turn.state.tools],
            solver=solver,
            history=history,
        )
    except ToolRuleViolation as err:
        return turn.failed("invalid_tool_call", str(err))
    overrides: dict[str, calls.CallResult] = {}
    tz = turn.agent.timezone
    for call in tool_calls:
        decision = decisions[call.id]
        if decision.type == "tool":  # the client ran the tool itself
            ok = decision.status != "error"
            text = packaging.tool_return(
                decision.tool_return or "", success=ok, now=turn.now, timezone=tz
            )
            overrides[call.id] = calls.CallResult(call, ok, text)
        elif not decision.approve:
            reason = decision.reason or "no reason given"
            text = packaging.tool_return(
                f"Error: request to call tool denied. User reason: {reason}",
                success=False,
                now=turn.now,
                timezone=tz,
            )
            overrides[call.id] = calls.CallResult(call, False, text)
    system = refreshed_system(turn.state, turn.state.blocks, solver, now=turn.now)
    return turn.run_tools(prepared, memory, history, system, overrides=overrides)
