"""A step's work on loaded state, built into a checkpoint value; it writes
nothing itself (`run/steps/step.py` commits it).

Here: what every kind of step shares (its messages, the model's answer, running the tools
called, the endings and the checkpoint). The kinds: `llm_step.py` (a model call),
`approval_step.py` (an answer to an approval request), `compaction_step.py` (a summary of
the oldest context); the model and its key, `step_model.py`."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from datetime import datetime
from typing import Any

from cairn.domain.constants import DEFAULT_MAX_STEPS
from cairn.domain.ids import new_id
from cairn.domain.messages import ContentPart, Message, TextContent
from cairn.domain.runs import (
    TERMINAL_RUN_STATUSES,
    Step,
    run_status_for,
    step_command,
)
from cairn.llm.clients import wire_body
from cairn.llm.types import Delta, LLMRequest, LLMResponse, MessageDelta
from cairn.memory import packaging
from cairn.memory.edits import CoreMemory
from cairn.run.backends import calls
from cairn.run.backends.context import StepToolContext
from cairn.run.ports import StepParts
from cairn.run.steps.policy import CallOutcome, after_tools, must_call_first, policy_for
from cairn.run.steps.prompt import context_estimate, refreshed_system
from cairn.run.steps.state import StepState
from cairn.store.checkpoints import Checkpoint
from cairn.tools.rules import ToolRulesSolver

logger = logging.getLogger(__name__)


class StepWork:
    """One step's work on loaded state; builds the checkpoint, writes nothing itself."""

    def __init__(
        self,
        parts: StepParts,
        state: StepState,
        journal: dict[str, dict[str, Any]],
        now: datetime,
        on_delta: MessageDelta | None = None,
    ) -> None:
        self.parts, self.state, self.journal, self.now = parts, state, journal, now
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
        self.group_id = (
            state.run.metadata.get("group_id") if "group_chain" in (state.run.metadata) else None
        )

    def _inputs(self) -> list[Message]:
        if self.state.step_index != 0:
            return []
        return [
            m.model_copy(update={"step_id": self.step.id}) for m in self.state.run.input_messages()
        ]

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
        response = self.parts.model.call(self.state, request, self.journal, relay)
        self.step.llm_request_ns = time.monotonic_ns() - started
        if self.parts.settings.provider_traces:
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

    def over_window(self) -> bool:
        return context_estimate(self.state, self.inputs) > self.agent.llm_config.context_window

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
        org = self.agent.organization_id  # who pays for the tools' embeddings
        ctx = StepToolContext(
            self.state,
            self.parts.db,
            self.now,
            memory,
            sandbox=self.parts.sandbox,
            sealer=self.parts.sealer,
            settings=self.parts.settings,
            embedder=self.parts.embedder_for(
                self.agent.embedding_config, self.agent.organization_id
            ),
            tool_timeout_seconds=self.parts.settings.tool_timeout_seconds,
            messenger=self.parts.messenger,
            embedder_for=lambda config: self.parts.embedder_for(config, org),
            scheduler=self.parts.scheduler,
            external_tools=self.parts.external_tools,
        )
        to_run = [p for p in prepared if p.call.id not in (overrides or {})]
        started = time.monotonic_ns()
        ran = calls.execute(
            to_run,
            ctx,
            now=self.now,
            timezone=self.agent.timezone,
            journaled=self.journal,
            write_journal=lambda key, done: self.parts.model.write_journal(self.state, key, done),
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
        logger.warning(
            "run %s failed: %s (%s): %s",
            self.state.run.id,
            stop_reason,
            kind or stop_reason,
            detail[:300],
        )
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
        # The run ends when its last step does (after its model call and tools), not when
        # that step started: a one-step run took the step's whole time.
        done_at = self.parts.clock() if ended else None
        updated_run = run.model_copy(
            update={
                "status": status,
                "stop_reason": stop_reason,
                "usage": total,
                "completed_at": done_at,
                "total_duration_ns": int((done_at - run.created_at).total_seconds() * 1e9)
                if done_at is not None
                else None,
            }
        )
        new = self.new if new is None else new
        created, updated, deleted = memory.changes() if memory else ([], [], [])
        if ctx is not None and ctx.new_passages:
            # An archival insert refreshes <memory_metadata> (its count and tags), as in Letta.
            system = self.after_archival_insert(ctx, memory)
        step = self.step.model_copy(
            update={"completed_at": self.parts.clock(), "kind": self.step.kind}
        )
        return Checkpoint(
            agent=self.agent,
            run=updated_run,
            step=step,
            new_messages=new,
            context_positions=state.context_positions,
            message_ids=message_ids
            if message_ids is not None
            else [*self.agent.message_ids, *(m.id for m in new)],
            system_rewrite=system,
            created_blocks=created,
            # Edited copies keep the version they were read at: the write checks it still holds.
            updated_blocks=updated,
            deleted_blocks=deleted,
            new_archive=ctx.new_archive if ctx else None,
            passages=ctx.new_passages if ctx else [],
            file_views=ctx.file_views() if ctx else [],
            commands=list(ctx.outgoing) if ctx else [],
            context_tokens=tokens[0] if tokens else None,
            context_tokens_upto=tokens[1] if tokens else None,
            trace=self.trace,
        )
