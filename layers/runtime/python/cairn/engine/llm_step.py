"""A model step: ask the model with the agent's context and the tools its rules allow, then
run what it called (or end the turn, or wait for approval)."""

from __future__ import annotations

from cairn.domain.messages import ContentPart, Message, TextContent
from cairn.engine import calls
from cairn.engine.image_descriptions import described, text_only
from cairn.engine.policy import must_call_first
from cairn.engine.prompt import refreshed_system, tool_schemas
from cairn.engine.turn import Turn
from cairn.llm.deadline import DeadlineReached
from cairn.llm.types import LLMError, LLMRequest
from cairn.memory import packaging
from cairn.memory.edits import CoreMemory
from cairn.store.checkpoints import Checkpoint
from cairn.tools.rules import ToolRuleViolation


def llm_request(turn: Turn) -> tuple[LLMRequest | None, Message | None, list[str], list[str]]:
    """What this step asks the model (None: the rules leave no tool to call), the
    rewritten system message if memory changed, the tools called so far and the tools
    allowed now."""
    state, solver = turn.state, turn.solver
    system = refreshed_system(state, state.blocks, solver, now=turn.now)
    history = state.tool_history()
    available = [t.name for t in state.tools]
    allowed = solver.allowed_tools(available, history, state.last_tool_output())
    if history and not allowed and turn.policy.tool_choice == "required":
        return None, system, history, allowed
    schemas = tool_schemas(
        state.tools,
        allowed,
        solver,
        turn.policy,
        thinking=turn.agent.llm_config.put_inner_thoughts_in_kwargs,
    )
    messages = [system or state.context[0], *state.context[1:], *turn.inputs]
    settings = turn.parts.settings
    if text_only(turn.agent.llm_config, settings):  # images become their descriptions
        clients = turn.parts.model.client
        messages = described(
            state.org_id,
            messages,
            turn.parts.db,
            settings,
            lambda config: clients(state.org_id, config),
        )
    request = LLMRequest(
        config=turn.agent.llm_config,
        messages=messages,
        tools=schemas,
        tool_choice=turn.policy.tool_choice if schemas else "auto",
    )
    return request, system, history, allowed


def llm_step(turn: Turn) -> Checkpoint:
    state, solver = turn.state, turn.solver
    memory = CoreMemory.of(state.org_id, state.blocks)
    request, system, history, allowed = llm_request(turn)
    if request is None:
        return turn.finish("tool_rule", system=system)
    try:
        response = turn.ask(request, streamed=True)
    except DeadlineReached:
        raise  # the caller's time ran out, not the provider: the queue runs it again
    except LLMError as err:
        # The SDK has spent the step's retries (CAIRN_LLM_MAX_RETRIES, with backoff):
        # the run ends here with the provider's message, as Letta's does; the queue's
        # redeliveries are for crashes, not for asking a failing provider again.
        return turn.failed("llm_api_error", str(err), system=system, kind=err.kind)
    turn.step = turn.step.model_copy(
        update={
            "prompt_tokens": response.usage.prompt_tokens,
            "completion_tokens": response.usage.completion_tokens,
            "total_tokens": response.usage.total_tokens,
            "model": response.model or turn.step.model,
        }
    )
    parts: list[ContentPart] = [*response.reasoning]
    if response.text:
        parts.append(TextContent(text=response.text))
    assistant = turn.message(
        "assistant",
        parts,
        tool_calls=response.tool_calls or None,
        model=response.model,
        id=turn.reply_id,
    )
    covered = len(state.context) + len(turn.inputs) + 1
    tokens = (response.usage.total_tokens, covered)
    if not response.tool_calls:
        turn.new.append(assistant)
        missing = solver.missing_before_exit(history)
        if missing:
            return turn.go_on(
                turn.heartbeat(must_call_first(missing)),
                system,
                memory,
                tokens=tokens,
                usage=response,
            )
        if turn.policy.text_ends_turn:
            return turn.finish("end_turn", system=system, tokens=tokens, usage=response)
        return turn.go_on(
            turn.heartbeat(packaging.NO_TOOL_CALL_REASON),
            system,
            memory,
            tokens=tokens,
            usage=response,
        )
    try:
        prepared = calls.prepare(
            response.tool_calls,
            tools=state.tools,
            allowed=allowed,
            solver=solver,
            history=history,
        )
    except ToolRuleViolation as err:
        turn.new.append(assistant)
        turn.new.append(
            turn.tool_message(
                [
                    calls.CallResult(
                        c,
                        False,
                        packaging.tool_return(
                            str(err), success=False, now=turn.now, timezone=turn.agent.timezone
                        ),
                    )
                    for c in response.tool_calls
                ]
            )
        )
        return turn.finish("invalid_tool_call", system=system, tokens=tokens, usage=response)
    if any(p.needs_approval and not p.error for p in prepared):
        turn.new.append(assistant.model_copy(update={"role": "approval"}))
        return turn.finish("requires_approval", system=system, tokens=tokens, usage=response)
    turn.new.append(assistant)
    return turn.run_tools(prepared, memory, history, system, tokens=tokens, usage=response)
