"""An answer to an approval request: approved calls run, denied ones return the person's
reason as an error, a client's own result is taken as the tool's return; no model call."""

from __future__ import annotations

from cairn.domain.messages import Message
from cairn.memory import packaging
from cairn.memory.edits import CoreMemory
from cairn.run.backends import calls
from cairn.run.steps.prompt import refreshed_system
from cairn.run.steps.step_work import StepWork
from cairn.store.checkpoints import Checkpoint
from cairn.tools.rules import ToolRuleViolation


def pending_approval(last: Message | None) -> Message | None:
    if last is not None and last.role == "approval" and last.tool_calls:
        return last
    return None


def approval_step(work: StepWork) -> Checkpoint:
    """Answer the pending approval: run approved calls, refuse denied ones, no LLM call."""
    work.step = work.step.model_copy(update={"kind": "approval"})
    pending = pending_approval(work.state.context[-1] if work.state.context else None)
    response = work.inputs[-1]
    if pending is None:
        return work.failed("invalid_tool_call", "no tool call is waiting for approval")
    decisions = {d.tool_call_id: d for d in response.approvals or ()}
    tool_calls = list(pending.tool_calls or ())
    missing = [c.id for c in tool_calls if c.id not in decisions]
    if missing:
        return work.failed("invalid_tool_call", f"no decision for tool calls {missing}")
    memory = CoreMemory.of(work.state.org_id, work.state.blocks)
    solver, history = work.solver, work.state.tool_history()
    try:
        prepared = calls.prepare(
            tool_calls,
            tools=work.state.tools,
            allowed=[t.name for t in work.state.tools],
            solver=solver,
            history=history,
        )
    except ToolRuleViolation as err:
        return work.failed("invalid_tool_call", str(err))
    overrides: dict[str, calls.CallResult] = {}
    tz = work.agent.timezone
    for call in tool_calls:
        decision = decisions[call.id]
        if decision.type == "tool":  # the client ran the tool itself
            ok = decision.status != "error"
            text = packaging.tool_return(
                decision.tool_return or "", success=ok, now=work.now, timezone=tz
            )
            overrides[call.id] = calls.CallResult(call, ok, text)
        elif not decision.approve:
            reason = decision.reason or "no reason given"
            text = packaging.tool_return(
                f"Error: request to call tool denied. User reason: {reason}",
                success=False,
                now=work.now,
                timezone=tz,
            )
            overrides[call.id] = calls.CallResult(call, False, text)
    system = refreshed_system(work.state, work.state.blocks, solver, now=work.now)
    return work.run_tools(prepared, memory, history, system, overrides=overrides)
