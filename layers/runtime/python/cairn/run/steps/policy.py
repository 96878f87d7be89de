"""Loop policies: how each agent type decides whether its turn goes on."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.memory.packaging import AUTOMATED_PREFIX, CONTINUE_RULE_REASON, HEARTBEAT_REASON

FAILED_REASON = AUTOMATED_PREFIX + "Function call failed, returning control"


@dataclass(frozen=True)
class LoopPolicy:
    # memgpt-style: tools carry request_heartbeat and the runtime answers with a heartbeat.
    heartbeats: bool
    # What the model is told about calling tools: "auto", or "required" (a tool every step).
    tool_choice: str
    # Whether text without a tool call ends the turn (else a heartbeat asks for a tool).
    text_ends_turn: bool


V1 = LoopPolicy(heartbeats=False, tool_choice="auto", text_ends_turn=True)
V2 = LoopPolicy(heartbeats=True, tool_choice="required", text_ends_turn=False)
SLEEPTIME = LoopPolicy(heartbeats=False, tool_choice="required", text_ends_turn=True)

_POLICIES = {
    "memgpt_agent": V2,
    "memgpt_v2_agent": V2,
    "split_thread_agent": V2,
    "voice_convo_agent": V2,
    "sleeptime_agent": SLEEPTIME,
    "voice_sleeptime_agent": SLEEPTIME,
}


def policy_for(agent_type: str) -> LoopPolicy:
    return _POLICIES.get(agent_type, V1)


@dataclass(frozen=True)
class CallOutcome:
    name: str
    success: bool
    request_heartbeat: bool | None
    terminal: bool
    continue_rule: bool


def after_tools(policy: LoopPolicy, outcomes: list[CallOutcome]) -> tuple[bool, str | None]:
    """(go on?, heartbeat reason to append) after a step that called tools."""
    if any(o.terminal for o in outcomes):
        return False, None
    if not policy.heartbeats:
        return True, None
    if any(o.continue_rule for o in outcomes):
        return True, CONTINUE_RULE_REASON
    if any(not o.success for o in outcomes):
        return True, FAILED_REASON
    if any(o.request_heartbeat for o in outcomes):
        return True, HEARTBEAT_REASON
    return False, None


def must_call_first(tools: list[str]) -> str:
    return f"{AUTOMATED_PREFIX}Before ending your turn you must call: {', '.join(tools)}."
