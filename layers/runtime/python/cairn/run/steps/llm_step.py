"""A model step: ask the model with the agent's context and the tools its rules allow, then
run what it called (or end the turn, or wait for approval)."""

from __future__ import annotations

from cairn.domain.messages import ContentPart, Message, TextContent
from cairn.llm.deadline import DeadlineReached
from cairn.llm.types import LLMError, LLMRequest
from cairn.memory import packaging
from cairn.memory.edits import CoreMemory
from cairn.run.backends import calls
from cairn.run.steps.image_descriptions import described, text_only
from cairn.run.steps.policy import must_call_first
from cairn.run.steps.prompt import refreshed_system, tool_schemas
from cairn.run.steps.step_work import StepWork
from cairn.store.checkpoints import Checkpoint
from cairn.tools.rules import ToolRuleViolation


def llm_request(work: StepWork) -> tuple[LLMRequest | None, Message | None, list[str], list[str]]:
    """What this step asks the model (None: the rules leave no tool to call), the
    rewritten system message if memory changed, the tools called so far and the tools
    allowed now."""
    state, solver = work.state, work.solver
    system = refreshed_system(state, state.blocks, solver, now=work.now)
    history = state.tool_history()
    available = [t.name for t in state.tools]
    allowed = solver.allowed_tools(available, history, state.last_tool_output())
    if history and not allowed and work.policy.tool_choice == "required":
        return None, system, history, allowed
    schemas = tool_schemas(
        state.tools,
        allowed,
        solver,
        work.policy,
        thinking=work.agent.llm_config.put_inner_thoughts_in_kwargs,
    )
    messages = [system or state.context[0], *state.context[1:], *work.inputs]
    settings = work.parts.settings
    if text_only(work.agent.llm_config, settings):  # images become their descriptions
        clients = work.parts.model.client
        messages = described(
            state.org_id,
            messages,
            work.parts.db,
            settings,
            lambda config: clients(state.org_id, config),
        )
    request = LLMRequest(
        config=work.agent.llm_config,
        messages=messages,
        tools=schemas,
        tool_choice=work.policy.tool_choice if schemas else "auto",
        user=state.org_id,
    )
    return request, system, history, allowed


def llm_step(work: StepWork) -> Checkpoint:
    state, solver = work.state, work.solver
    memory = CoreMemory.of(state.org_id, state.blocks)
    request, system, history, allowed = llm_request(work)
    if request is None:
        return work.finish("tool_rule", system=system)
    try:
        response = work.ask(request, streamed=True)
    except DeadlineReached:
        raise  # the caller's time ran out, not the provider: the queue runs it again
    except LLMError as err:
        # The SDK has spent the step's retries (CAIRN_LLM_MAX_RETRIES, with backoff):
        # the run ends here with the provider's message, as Letta's does; the queue's
        # redeliveries are for crashes, not for asking a failing provider again.
        return work.failed("llm_api_error", str(err), system=system, kind=err.kind)
    work.step = work.step.model_copy(
        update={
            **response.usage.step_fields(),
            "tool_calls": len(response.tool_calls),
            "model": response.model or work.step.model,
        }
    )
    parts: list[ContentPart] = [*response.reasoning]
    if response.text:
        parts.append(TextContent(text=response.text))
    assistant = work.message(
        "assistant",
        parts,
        tool_calls=response.tool_calls or None,
        model=response.model,
        id=work.reply_id,
    )
    covered = len(state.context) + len(work.inputs) + 1
    tokens = (response.usage.total_tokens, covered)
    if not response.tool_calls:
        work.new.append(assistant)
        missing = solver.missing_before_exit(history)
        if missing:
            return work.go_on(
                work.heartbeat(must_call_first(missing)),
                system,
                memory,
                tokens=tokens,
                usage=response,
            )
        if work.policy.text_ends_turn:
            return work.finish("end_turn", system=system, tokens=tokens, usage=response)
        return work.go_on(
            work.heartbeat(packaging.NO_TOOL_CALL_REASON),
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
        work.new.append(assistant)
        work.new.append(
            work.tool_message(
                [
                    calls.CallResult(
                        c,
                        False,
                        packaging.tool_return(
                            str(err), success=False, now=work.now, timezone=work.agent.timezone
                        ),
                    )
                    for c in response.tool_calls
                ]
            )
        )
        return work.finish("invalid_tool_call", system=system, tokens=tokens, usage=response)
    if any(p.needs_approval and not p.error for p in prepared):
        work.new.append(assistant.model_copy(update={"role": "approval"}))
        return work.finish("requires_approval", system=system, tokens=tokens, usage=response)
    work.new.append(assistant)
    return work.run_tools(prepared, memory, history, system, tokens=tokens, usage=response)
