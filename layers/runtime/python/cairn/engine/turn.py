"""The turn: one step's work on loaded state (an LLM step, an approval answer or a
compaction), built into a checkpoint value; it writes nothing itself (`engine/step.py`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from cairn.config import Settings
from cairn.domain.agents import Agent
from cairn.domain.constants import DEFAULT_MAX_STEPS
from cairn.domain.ids import new_id
from cairn.domain.messages import ContentPart, Message, TextContent
from cairn.domain.runs import (
    TERMINAL_RUN_STATUSES,
    Step,
    run_status_for,
    step_command,
)
from cairn.embeddings.base import Embedder
from cairn.engine import calls, compaction
from cairn.engine.context import StepToolContext
from cairn.engine.policy import CallOutcome, after_tools, must_call_first, policy_for
from cairn.engine.prompt import context_estimate, refreshed_system, tool_schemas
from cairn.engine.state import StepState
from cairn.llm.clients import wire_body
from cairn.llm.deadline import DeadlineReached
from cairn.llm.types import Delta, LLMError, LLMRequest, LLMResponse, MessageDelta, OnDelta
from cairn.memory import packaging
from cairn.memory.edits import CoreMemory
from cairn.store.checkpoints import Checkpoint
from cairn.store.db import Database
from cairn.tools.rules import ToolRulesSolver, ToolRuleViolation
from cairn.tools.sandbox import Sandbox

logger = logging.getLogger(__name__)


class StepEngine(Protocol):
    """What a turn uses of the engine that runs it (`engine/step.py`'s Engine)."""

    db: Database
    settings: Settings
    sandbox: Sandbox

    _clock: Callable[[], datetime]

    def call_llm(
        self,
        state: StepState,
        request: LLMRequest,
        journal: dict[str, dict[str, Any]],
        on_delta: OnDelta | None = None,
    ) -> LLMResponse: ...

    def embedder_of(self, agent: Agent) -> Embedder: ...

    def write_journal(self, state: StepState, key: str, payload: dict[str, Any]) -> None: ...


def _pending_approval(last: Message | None) -> Message | None:
    if last is not None and last.role == "approval" and last.tool_calls:
        return last
    return None


class Turn:
    """One step's work on loaded state; builds the checkpoint, writes nothing itself."""

    def __init__(
        self,
        engine: StepEngine,
        state: StepState,
        journal: dict[str, dict[str, Any]],
        now: datetime,
        on_delta: MessageDelta | None = None,
    ) -> None:
        self.engine, self.state, self.journal, self.now = engine, state, journal, now
        self.on_delta = on_delta
        # The id the model's answer is stored under, known before it is asked: the pieces
        # a stream's reader gets while it answers carry it.
        self.reply_id = new_id("message")
        self.agent = state.agent
        self.policy = policy_for(self.agent.agent_type)
        self.solver = ToolRulesSolver.of(self.agent.tool_rules)
        self.step = Step(
            organization_id=state.org_id,
            run_id=state.run.id,
            agent_id=self.agent.id,
            step_index=state.step_index,
            started_at=now,
            model=self.agent.llm_config.model,
            provider_name=self.agent.llm_config.model_endpoint_type,
            model_endpoint=self.agent.llm_config.model_endpoint,
            context_window_limit=self.agent.llm_config.context_window,
        )
        self.inputs = self._inputs()
        self.new: list[Message] = list(self.inputs)
        self.max_steps = int(state.run.request_config.get("max_steps") or DEFAULT_MAX_STEPS)
        self.trace: tuple[dict[str, Any], dict[str, Any]] | None = None
        # A turn of a multi-agent group's message: what it says belongs to the group.
        self.group_id = state.run.metadata.get("group_id") if "group_chain" in (
            state.run.metadata) else None  # fmt: skip

    def _inputs(self) -> list[Message]:
        if self.state.step_index != 0:
            return []
        raw = self.state.run.request_config.get("input") or []
        return [Message.model_validate(m).model_copy(update={"step_id": self.step.id}) for m in raw]

    def message(self, role: str, parts: list[ContentPart] | None = None, **fields: Any) -> Message:
        return Message(
            organization_id=self.state.org_id,
            agent_id=self.agent.id,
            role=role,
            content=parts or [],
            run_id=self.state.run.id,
            step_id=self.step.id,
            created_at=self.now,
            group_id=self.group_id,
            **fields,
        )

    def heartbeat(self, reason: str) -> Message:
        text = packaging.heartbeat(now=self.now, timezone=self.agent.timezone, reason=reason)
        return self.message("user", [TextContent(text=text)])

    def ask(self, request: LLMRequest, *, streamed: bool = False) -> LLMResponse:
        """The model's response, timed for the step's metrics and traced if configured;
        `streamed`: its pieces go to the turn's listener as they arrive."""
        started = time.monotonic_ns()
        relay = self._relay if streamed and self.on_delta is not None else None
        response = self.engine.call_llm(self.state, request, self.journal, relay)
        self.step.llm_request_ns = time.monotonic_ns() - started
        if self.engine.settings.provider_traces:
            self.trace = (wire_body(request), response.model_dump(mode="json"))
        return response

    def _relay(self, delta: Delta) -> None:
        """A piece of the answer to the listener; a call that will wait for approval is
        told apart, as the request for approval it becomes."""
        assert self.on_delta is not None
        if delta.kind == "tool_call" and self._needs_approval(delta.name):
            delta = delta._replace(kind="approval")
        self.on_delta(self.reply_id, delta)

    def _needs_approval(self, name: str | None) -> bool:
        tool = next((t for t in self.state.tools if t.name == name), None)
        return tool is not None and self.solver.requires_approval(
            tool.name, default=tool.default_requires_approval
        )

    # -- kinds of step ----------------------------------------------------------------

    def over_window(self) -> bool:
        return context_estimate(self.state, self.inputs) > self.agent.llm_config.context_window

    def llm_request(self) -> tuple[LLMRequest | None, Message | None, list[str], list[str]]:
        """What this step asks the model (None: the rules leave no tool to call), the
        rewritten system message if memory changed, the tools called so far and the tools
        allowed now."""
        state, solver = self.state, self.solver
        system = refreshed_system(state, state.blocks, solver, now=self.now)
        history = state.tool_history()
        available = [t.name for t in state.tools]
        allowed = solver.allowed_tools(available, history, state.last_tool_output())
        if history and not allowed and self.policy.tool_choice == "required":
            return None, system, history, allowed
        schemas = tool_schemas(
            state.tools,
            allowed,
            solver,
            self.policy,
            thinking=self.agent.llm_config.put_inner_thoughts_in_kwargs,
        )
        request = LLMRequest(
            config=self.agent.llm_config,
            messages=[system or state.context[0], *state.context[1:], *self.inputs],
            tools=schemas,
            tool_choice=self.policy.tool_choice if schemas else "auto",
        )
        return request, system, history, allowed

    def llm_step(self) -> Checkpoint:
        state, solver = self.state, self.solver
        memory = CoreMemory.of(state.org_id, state.blocks)
        request, system, history, allowed = self.llm_request()
        if request is None:
            return self.finish("tool_rule", system=system)
        try:
            response = self.ask(request, streamed=True)
        except DeadlineReached:
            raise  # the caller's time ran out, not the provider: the queue runs it again
        except LLMError as err:
            # The SDK has spent the step's retries (CAIRN_LLM_MAX_RETRIES, with backoff):
            # the run ends here with the provider's message, as Letta's does; the queue's
            # redeliveries are for crashes, not for asking a failing provider again.
            return self.failed("llm_api_error", str(err), system=system, kind=err.kind)
        self.step = self.step.model_copy(
            update={
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
                "total_tokens": response.usage.total_tokens,
                "model": response.model or self.step.model,
            }
        )
        parts: list[ContentPart] = [*response.reasoning]
        if response.text:
            parts.append(TextContent(text=response.text))
        assistant = self.message(
            "assistant",
            parts,
            tool_calls=response.tool_calls or None,
            model=response.model,
            id=self.reply_id,
        )
        covered = len(state.context) + len(self.inputs) + 1
        tokens = (response.usage.total_tokens, covered)
        if not response.tool_calls:
            self.new.append(assistant)
            missing = solver.missing_before_exit(history)
            if missing:
                return self.go_on(
                    self.heartbeat(must_call_first(missing)),
                    system,
                    memory,
                    tokens=tokens,
                    usage=response,
                )
            if self.policy.text_ends_turn:
                return self.finish("end_turn", system=system, tokens=tokens, usage=response)
            return self.go_on(
                self.heartbeat(packaging.NO_TOOL_CALL_REASON),
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
            self.new.append(assistant)
            self.new.append(
                self.tool_message(
                    [
                        calls.CallResult(
                            c,
                            False,
                            packaging.tool_return(
                                str(err), success=False, now=self.now, timezone=self.agent.timezone
                            ),
                        )
                        for c in response.tool_calls
                    ]
                )
            )
            return self.finish("invalid_tool_call", system=system, tokens=tokens, usage=response)
        if any(p.needs_approval and not p.error for p in prepared):
            self.new.append(assistant.model_copy(update={"role": "approval"}))
            return self.finish("requires_approval", system=system, tokens=tokens, usage=response)
        self.new.append(assistant)
        return self.run_tools(prepared, memory, history, system, tokens=tokens, usage=response)

    def run_tools(
        self,
        prepared: list[calls.PreparedCall],
        memory: CoreMemory,
        history: list[str],
        system: Message | None,
        *,
        tokens: tuple[int, int] | None = None,
        usage: LLMResponse | None = None,
        overrides: dict[str, calls.CallResult] | None = None,
    ) -> Checkpoint:
        ctx = StepToolContext(
            self.state,
            self.engine.db,
            self.now,
            memory,
            sandbox=self.engine.sandbox,
            embedder=self.engine.embedder_of(self.agent),
            tool_timeout_seconds=self.engine.settings.tool_timeout_seconds,
        )
        to_run = [p for p in prepared if p.call.id not in (overrides or {})]
        started = time.monotonic_ns()
        ran = calls.execute(
            to_run,
            ctx,
            now=self.now,
            timezone=self.agent.timezone,
            journaled=self.journal,
            write_journal=lambda key, payload: self.engine.write_journal(self.state, key, payload),
        )
        self.step.tool_execution_ns = time.monotonic_ns() - started
        by_id = {r.call.id: r for r in ran} | (overrides or {})
        results = [by_id[p.call.id] for p in prepared]
        self.new.append(self.tool_message(results))
        outcomes = [
            CallOutcome(
                p.name,
                r.success,
                p.request_heartbeat,
                self.solver.is_terminal(p.name),
                self.solver.is_continue(p.name),
            )
            for p, r in zip(prepared, results, strict=True)
        ]
        go_on, reason = after_tools(self.policy, outcomes)
        called = history + [p.name for p in prepared]
        missing = self.solver.missing_before_exit(called)
        if not go_on and missing:
            go_on, reason = True, must_call_first(missing)
        extra = {"ctx": ctx}
        if not go_on:
            return self.finish(
                "end_turn", system=system, memory=memory, tokens=tokens, usage=usage, **extra
            )
        available = [t.name for t in self.state.tools]
        last_output = results[-1].func_response if results else None
        next_allowed = self.solver.allowed_tools(available, called, last_output)
        if not next_allowed and self.policy.tool_choice == "required":
            return self.finish(
                "tool_rule", system=system, memory=memory, tokens=tokens, usage=usage, **extra
            )
        beat = self.heartbeat(reason) if reason else None
        return self.go_on(beat, system, memory, tokens=tokens, usage=usage, **extra)

    def tool_message(self, results: list[calls.CallResult]) -> Message:
        return self.message(
            "tool",
            [TextContent(text=r.func_response) for r in results],
            tool_call_id=results[0].call.id,
            name=results[0].call.function.name,
            tool_returns=[r.tool_return() for r in results],
        )

    def approval_step(self) -> Checkpoint:
        """Answer the pending approval: run approved calls, refuse denied ones, no LLM call."""
        self.step = self.step.model_copy(update={"kind": "approval"})
        pending = _pending_approval(self.state.context[-1] if self.state.context else None)
        response = self.inputs[-1]
        if pending is None:
            return self.failed("invalid_tool_call", "no tool call is waiting for approval")
        decisions = {d.tool_call_id: d for d in response.approvals or ()}
        tool_calls = list(pending.tool_calls or ())
        missing = [c.id for c in tool_calls if c.id not in decisions]
        if missing:
            return self.failed("invalid_tool_call", f"no decision for tool calls {missing}")
        memory = CoreMemory.of(self.state.org_id, self.state.blocks)
        solver, history = self.solver, self.state.tool_history()
        try:
            prepared = calls.prepare(
                tool_calls,
                tools=self.state.tools,
                allowed=[t.name for t in self.state.tools],
                solver=solver,
                history=history,
            )
        except ToolRuleViolation as err:
            return self.failed("invalid_tool_call", str(err))
        overrides: dict[str, calls.CallResult] = {}
        tz = self.agent.timezone
        for call in tool_calls:
            decision = decisions[call.id]
            if decision.type == "tool":  # the client ran the tool itself
                ok = decision.status != "error"
                text = packaging.tool_return(
                    decision.tool_return or "", success=ok, now=self.now, timezone=tz
                )
                overrides[call.id] = calls.CallResult(call, ok, text)
            elif not decision.approve:
                reason = decision.reason or "no reason given"
                text = packaging.tool_return(
                    f"Error: request to call tool denied. User reason: {reason}",
                    success=False,
                    now=self.now,
                    timezone=tz,
                )
                overrides[call.id] = calls.CallResult(call, False, text)
        system = refreshed_system(self.state, self.state.blocks, solver, now=self.now)
        return self.run_tools(prepared, memory, history, system, overrides=overrides)

    def compaction_step(self) -> Checkpoint | None:
        """Summarise the oldest part of the context; None when there is nothing to evict."""
        state = self.state
        settings = compaction.settings_of(self.agent)
        cut = compaction.cut_index(state.context, settings)
        evicted = state.context[1:cut]
        if not evicted:
            return None
        self.step = self.step.model_copy(update={"kind": "compaction"})
        request = compaction.summary_request(self.agent, evicted)
        try:
            response = self.ask(request)
        except DeadlineReached:
            raise
        except LLMError as err:
            return self.failed("llm_api_error", f"summarising failed: {err}", kind=err.kind)
        summary = compaction.summary_message(
            self.agent, response.text, now=self.now, run_id=state.run.id, step_id=self.step.id
        )
        self.step = self.step.model_copy(
            update={
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
                "total_tokens": response.usage.total_tokens,
            }
        )
        kept = state.context[cut:]
        ids = [state.context[0].id, summary.id, *(m.id for m in kept), *(m.id for m in self.inputs)]
        only = bool(state.run.request_config.get("compact_only"))  # summarise on request
        cp = self.checkpoint(
            status="completed" if only else "running",
            stop_reason="end_turn" if only else None,
            usage=response,
            message_ids=ids,
            new=[summary, *self.inputs],
        )
        if not only:
            cp.next_command = step_command(state.run, state.step_index + 1)
        return cp

    # -- endings ----------------------------------------------------------------------

    def go_on(
        self,
        beat: Message | None,
        system: Message | None,
        memory: CoreMemory,
        *,
        tokens: tuple[int, int] | None = None,
        usage: LLMResponse | None = None,
        ctx: StepToolContext | None = None,
    ) -> Checkpoint:
        if beat is not None:
            self.new.append(beat)
        if self.state.run.metadata.get("run_type") == "approval_cancel":
            # A cancelled run's approval, closed by denials: nobody wants the model's answer.
            return self.finish(
                "cancelled", system=system, memory=memory, tokens=tokens, usage=usage, ctx=ctx
            )
        if self.state.step_index + 1 >= self.max_steps:
            return self.finish(
                "max_steps", system=system, memory=memory, tokens=tokens, usage=usage, ctx=ctx
            )
        cp = self.checkpoint(
            status="running",
            stop_reason=None,
            usage=usage,
            system=system,
            memory=memory,
            tokens=tokens,
            ctx=ctx,
        )
        cp.next_command = step_command(self.state.run, self.state.step_index + 1)
        return cp

    def finish(
        self,
        stop_reason: str,
        *,
        system: Message | None = None,
        memory: CoreMemory | None = None,
        tokens: tuple[int, int] | None = None,
        usage: LLMResponse | None = None,
        ctx: StepToolContext | None = None,
    ) -> Checkpoint:
        self.step = self.step.model_copy(update={"stop_reason": stop_reason})
        return self.checkpoint(
            status=run_status_for(stop_reason),  # type: ignore[arg-type]
            stop_reason=stop_reason,
            usage=usage,
            system=system,
            memory=memory,
            tokens=tokens,
            ctx=ctx,
        )

    def failed(
        self,
        stop_reason: str,
        detail: str,
        *,
        system: Message | None = None,
        kind: str | None = None,
    ) -> Checkpoint:
        """End the run as failed; its inputs are kept as recall but stay out of the context."""
        error = {"message": detail, "type": kind or stop_reason}
        # One line per failed run, which the stack counts (its LLM errors metric filter).
        logger.warning("run %s failed: %s (%s): %s", self.state.run.id, stop_reason,
                       kind or stop_reason, detail[:300])  # fmt: skip
        self.step = self.step.model_copy(
            update={"status": "failed", "stop_reason": stop_reason, "error": error}
        )
        cp = self.checkpoint(
            status="failed",
            stop_reason=stop_reason,
            usage=None,
            system=system,
            message_ids=[m.id for m in self.state.context],
            new=self.inputs,
        )
        cp.run = cp.run.model_copy(update={"error": error})
        return cp

    def after_archival_insert(self, ctx: StepToolContext, memory: CoreMemory | None) -> Message:
        state = self.state
        tags = sorted({*state.archival_tags, *(t for p in ctx.new_passages for t in p.tags)})
        counted = replace(
            state,
            archival_count=state.archival_count + len(ctx.new_passages),
            archival_tags=tags,
        )
        blocks = list(memory.blocks.values()) if memory else state.blocks
        rebuilt = refreshed_system(counted, blocks, self.solver, now=self.now, force=True)
        assert rebuilt is not None
        return rebuilt

    def checkpoint(
        self,
        *,
        status: str,
        stop_reason: str | None,
        usage: LLMResponse | None,
        system: Message | None = None,
        memory: CoreMemory | None = None,
        tokens: tuple[int, int] | None = None,
        ctx: StepToolContext | None = None,
        message_ids: list[str] | None = None,
        new: list[Message] | None = None,
    ) -> Checkpoint:
        state, run = self.state, self.state.run
        total = run.usage.plus_step(usage.usage if usage is not None else None)
        ended = status in TERMINAL_RUN_STATUSES
        updated_run = run.model_copy(
            update={
                "status": status,
                "stop_reason": stop_reason,
                "usage": total,
                "completed_at": self.now if ended else None,
                "total_duration_ns": int((self.now - run.created_at).total_seconds() * 1e9)
                if ended
                else None,
            }
        )
        new = self.new if new is None else new
        created, updated, deleted = memory.changes() if memory else ([], [], [])
        if ctx is not None and ctx.new_passages:
            # An archival insert refreshes <memory_metadata> (its count and tags), as in Letta.
            system = self.after_archival_insert(ctx, memory)
        step = self.step.model_copy(
            update={"completed_at": self.engine._clock(), "kind": self.step.kind}
        )
        return Checkpoint(
            agent=self.agent,
            run=updated_run,
            step=step,
            new_messages=new,
            context_positions=state.context_positions,
            message_ids=message_ids
            if message_ids is not None
            else [*(m.id for m in state.context), *(m.id for m in new)],
            system_rewrite=system,
            created_blocks=created,
            # Edited copies keep the version they were read at: the write checks it still holds.
            updated_blocks=updated,
            deleted_blocks=deleted,
            new_archive=ctx.new_archive if ctx else None,
            passages=ctx.new_passages if ctx else [],
            context_tokens=tokens[0] if tokens else None,
            context_tokens_upto=tokens[1] if tokens else None,
            trace=self.trace,
        )
