"""The step: one LLM call (or one approval or compaction) ending in one atomic checkpoint.

`Engine.step(org, run_id, step_index)` may be delivered any number of times, concurrently
or after a crash at any point. It reads, calls the model with no transaction open, journals
the response before any tool runs, and commits everything in `store.checkpoints.commit`. A second
delivery reuses the journal (no second model call) and a committed step is never redone.

Here: claiming a step, choosing its kind and the commit. The step's own work (the model
and its key, tools, endings) is `run/steps/step_work.py` and the modules of each kind it names; a
run's start and its end from outside a step, `run/driving/lifecycle.py`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from cairn import faults, tracing
from cairn.config import Settings
from cairn.domain.agents import MAX_COALESCE_SECONDS, Agent
from cairn.domain.base import utc_now
from cairn.domain.configs import EmbeddingConfig, LLMConfig
from cairn.domain.limits import budget_spent
from cairn.domain.messages import Message
from cairn.domain.runs import (
    TERMINAL_RUN_STATUSES,
    OutboxCommand,
    Run,
    StepKind,
    step_command,
)
from cairn.domain.schedules import Schedule
from cairn.embeddings import providers
from cairn.embeddings.base import Embedder
from cairn.errors import (
    ConflictError,
    VersionConflictError,
    found,
)
from cairn.llm.clients import LLMClient, wire_body
from cairn.llm.types import MessageDelta
from cairn.prices import TOKENS, step_cost
from cairn.run import embedding_spend
from cairn.run.backends.agent_messages import Messenger
from cairn.run.driving import lifecycle
from cairn.run.driving.follow_ons import embed_job, follow_ons
from cairn.run.driving.lifecycle import LEASE_SECONDS
from cairn.run.metering import Meter, NoMeter
from cairn.run.ports import ExternalTools, RunEnd, StepParts
from cairn.run.steps.state import StepState, load
from cairn.run.steps.step_model import ProviderKeyLookup, StepModel
from cairn.sealing import Sealer
from cairn.store import claim as claims
from cairn.store import runs
from cairn.store.checkpoints import AlreadyCommitted, commit
from cairn.store.claim import Claim
from cairn.store.db import Database
from cairn.tools.sandbox import Sandbox

logger = logging.getLogger(__name__)

# A block edited by a person while the step ran: redo the step on fresh state this often.
MAX_CONFLICT_RETRIES = 3

StepStatus = Literal["committed", "already_done", "busy", "throttled", "run_finished", "missing"]


@dataclass(frozen=True)
class StepOutcome:
    status: StepStatus
    next_command: OutboxCommand | None = None
    stop_reason: str | None = None
    run_status: str | None = None
    agent_id: str | None = None
    commands: tuple[OutboxCommand, ...] = ()
    # The run as this step left it and the messages it stored (committed steps), so a
    # waiting caller need not read them.
    run: Run | None = None
    messages: tuple[Message, ...] = ()
    # The run ended here: the steps of other runs that waited for its agent, to publish.
    waiting: tuple[OutboxCommand, ...] = ()

    @property
    def freed_agent(self) -> bool:
        """The run ended here, so runs waiting for its agent can go."""
        return self.status == "committed" and self.run_status in TERMINAL_RUN_STATUSES


class Engine:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        *,
        sandbox: Sandbox,
        llm_for: Callable[[LLMConfig], LLMClient],
        embedder_for: Callable[[EmbeddingConfig], Embedder],
        sealer: Sealer,
        clock: Callable[[], datetime] = utc_now,
        provider_keys: ProviderKeyLookup | None = None,
        scheduler: Callable[[Schedule], object] | None = None,
        run_end: tuple[RunEnd, ...] = (),
        external_tools: ExternalTools | None = None,
        meter: Meter | None = None,
    ) -> None:
        self.db = db
        # The operator's metrics (CloudWatch on AWS): given at assembly, none by default.
        self.meter: Meter = meter or NoMeter()
        self.settings = settings
        # Opens agents' secrets for their tools' calls.
        self.sealer = sealer
        # A model's client and an embedding config's embedder, as assembly makes them (the
        # tests hand in fakes): nothing is built here from the environment.
        self._llm_for = llm_for
        self._clock = clock
        # Custom tools (and stdio MCP servers) run here: the jail locally, a locked-down
        # Lambda on AWS; assembly chooses.
        self.sandbox = sandbox
        self._embedder_for = embedder_for
        # An organization's own providers (the providers API): its key, by provider name.
        self._provider_keys = provider_keys
        # Registers a schedule an agent made with what fires it on time (EventBridge
        # Scheduler on AWS; None: the sweeper's round fires it).
        self.scheduler = scheduler
        # What a run's end starts besides the core's own (an edge's: a channel's reply),
        # written with the checkpoint that ends it; given at assembly.
        self.run_end = run_end
        # Calls tools served elsewhere (MCP servers'), given at assembly: the run names no
        # integration.
        self.external_tools = external_tools

    def embedder_of(self, agent: Agent) -> Embedder:
        """The agent's embedder, its organization paying; agents created without a config
        get the server default."""
        return self.embedder_for(agent.embedding_config, agent.organization_id)

    def embedder_for(self, config: EmbeddingConfig | None, org: str | None = None) -> Embedder:
        """The embedder of `config`; with `org`, one that organization pays for: refused
        once its monthly budget is spent, each call's tokens and cost counted (a model in
        this process costs nothing and is not metered)."""
        embedder = self._embedder_for(config or providers.default_config(self.settings))
        return (
            embedder
            if org is None
            else embedding_spend.paid_by(org, embedder, self.db, self.settings)
        )

    def model(self) -> StepModel:
        """The model clients, with the server's keys or an organization's own."""
        return StepModel(self.db, self.settings, self._llm_for, self._provider_keys)

    def step_parts(self, messenger: Messenger | None = None) -> StepParts:
        """What a step's work is done with, as the engine was given them;
        `messenger` runs the turns of agents its tools message (None: such tools answer an
        error), handed in by whoever drives the step, which is what runs turns."""
        return StepParts(
            self.model(),
            self.db,
            self.settings,
            self.sandbox,
            self.embedder_for,
            self._clock,
            self.sealer,
            messenger,
            self.scheduler,
            self.external_tools,
        )

    # -- one step ---------------------------------------------------------------------

    def step(
        self,
        org_id: str,
        run_id: str,
        step_index: int,
        *,
        claimed: Claim | None = None,
        on_delta: MessageDelta | None = None,
        messenger: Messenger | None = None,
        agent_id: str | None = None,
    ) -> StepOutcome:
        """Run the step; `claimed` is its claim if the caller took it already (start_run).
        With `on_delta`, the model's answer is streamed and each piece handed on with the
        id its message will be stored under (a stream's reader sees it as it is made);
        `messenger` runs the turns of the agents its tools message. `agent_id`, the run's
        agent when the caller knows it, lets the claim skip the window's messages this
        process holds parsed (store/parsed_windows.py)."""
        for attempt in range(1, MAX_CONFLICT_RETRIES + 1):
            try:
                return self._step(
                    org_id, run_id, step_index, claimed, on_delta, messenger, agent_id
                )
            except VersionConflictError as err:
                logger.info(
                    "step %s/%s conflicted (%s), attempt %d", run_id, step_index, err, attempt
                )
            claimed = None  # a retry reads fresh state
        return self._step(org_id, run_id, step_index, None, on_delta, messenger, agent_id)

    def _step(
        self,
        org_id: str,
        run_id: str,
        step_index: int,
        claimed: Claim | None,
        on_delta: MessageDelta | None,
        messenger: Messenger | None,
        agent_id: str | None = None,
    ) -> StepOutcome:
        got = claimed
        while got is None or got.held_seconds > 0:
            if got is not None:  # a coalescing run's first step: more messages may join it
                time.sleep(min(got.held_seconds, MAX_COALESCE_SECONDS))
            with self.db.connection() as conn:
                got = claims.claim(
                    conn,
                    org_id,
                    run_id,
                    step_index,
                    lease_seconds=LEASE_SECONDS,
                    cap=self.settings.org_max_runs,
                    reserve_at=self.settings.reserve_at,
                    agent_id=agent_id,
                )
        run = got.run
        if run is None:
            return StepOutcome("missing")
        if step_index == 0 and got.agent is not None and "coalesce_until" in run.request_config:
            # The claim read the run before it took the lease: a send that joined meanwhile
            # is only in the row as it is now (store/runs.py START_RUN).
            with self.db.connection() as conn:
                run = runs.get_run(conn, org_id, run_id) or run
        if got.done:
            # A redelivery: hand back the continuation in case its publish was lost.
            nxt = got.next_command
            return StepOutcome("already_done", nxt if nxt and not nxt.sent_at else None)
        if run.status in TERMINAL_RUN_STATUSES:
            return StepOutcome("run_finished", run_status=run.status)
        if got.agent is None:  # another run holds it, or its organization holds its share
            if got.org_full:
                self.meter.throttled(org_id, "max_runs")
            return StepOutcome("throttled" if got.org_full else "busy", agent_id=run.agent_id)
        # The step's span, a child of its run's wherever the run started (cairn/tracing.py).
        with tracing.span(
            "step",
            parent=run.request_config.get("traceparent"),
            attributes={
                "cairn.run_id": run_id,
                "cairn.agent_id": run.agent_id,
                "cairn.organization_id": org_id,
                "cairn.step_index": step_index,
            },
        ) as span:
            outcome = self._take(got, run, step_index, on_delta, messenger)
            span.set_attribute("cairn.step.outcome", outcome.status)
            if outcome.stop_reason:
                span.set_attribute("cairn.stop_reason", outcome.stop_reason)
            if outcome.run_status == "failed":
                tracing.failed(span, outcome.stop_reason or "failed")
            return outcome

    def _take(
        self,
        got: Claim,
        run: Run,
        step_index: int,
        on_delta: MessageDelta | None,
        messenger: Messenger | None,
    ) -> StepOutcome:
        """The step's work once its claim holds the agent: the model, the tools, the
        checkpoint."""
        began = time.perf_counter()
        org_id, run_id = run.organization_id, run.id
        assert got.agent is not None
        state = StepState(
            run=run,
            step_index=step_index,
            agent=got.agent,
            blocks=got.blocks,
            tools=got.tools,
            context=got.context,
            context_positions=got.context_positions,
            archive=got.archive,
            recall_count=got.recall_count,
            archival_count=got.archival_count,
            archival_tags=got.archival_tags,
            folders=got.folders or [],
        )
        journal = got.journal
        previous_kind = got.previous_kind
        now = self._clock()
        # What only a step needs, not imported by requests.
        from cairn.run.steps.approval_step import approval_step
        from cairn.run.steps.compaction_step import compaction_step
        from cairn.run.steps.llm_step import llm_step
        from cairn.run.steps.step_work import StepWork

        work = StepWork(self.step_parts(messenger), state, journal, now, on_delta)
        if got.spent is not None:
            # The organization spent its monthly budget: the run ends here, before another
            # model call (the step before it finished and is kept).
            self.meter.throttled(org_id, got.spent)
            cp = work.failed("error", str(budget_spent(org_id, got.spent)), kind="budget_exceeded")
        elif run.request_config.get("compact_only"):
            cp = compaction_step(work) or work.finish("end_turn")
        elif work.inputs and work.inputs[-1].role == "approval":
            cp = approval_step(work)
        elif previous_kind != "compaction" and work.over_window():
            cp = compaction_step(work) or llm_step(work)
        else:
            cp = llm_step(work)
        faults.reached("before_commit")
        follow_ons(cp, self.run_end)
        tokens = cp.step.model_dump(include=TOKENS)
        cp.cost_usd = step_cost(cp.step.model, tokens, self.settings.prices)
        try:
            with tracing.span(
                "checkpoint",
                kind=tracing.CLIENT,
                attributes={
                    "db.system.name": "postgresql",
                    "cairn.messages": len(cp.new_messages),
                    "cairn.run_status": cp.run.status,
                },
            ):
                done = commit(self.db, cp, now=self._clock(), org_cap=self.settings.org_max_runs)
        except AlreadyCommitted:
            return StepOutcome("already_done")
        faults.reached("after_commit")
        self.meter.step(
            org_id,
            step_ms=(time.perf_counter() - began) * 1000,
            model_ms=cp.step.llm_request_ns / 1e6 if cp.step.llm_request_ns else None,
            input_tokens=cp.step.prompt_tokens,
            output_tokens=cp.step.completion_tokens,
            run_failed=cp.run.status == "failed",
        )
        return StepOutcome(
            "committed",
            done.next_command,
            cp.run.stop_reason,
            cp.run.status,
            cp.agent.id,
            (*done.commands, *embed_job(cp, org_id, run_id, now)),
            done.run,
            tuple(done.messages),
            tuple(done.waiting),
        )

    def fail_run(
        self, org_id: str, run_id: str, reason: str, detail: str, *, kind: str | None = None
    ) -> Run | None:
        """`lifecycle.fail_run` at this engine's clock."""
        return lifecycle.fail_run(self.db, self._clock(), org_id, run_id, reason, detail, kind=kind)

    def preview(self, org_id: str, agent_id: str, inputs: list[Message]) -> dict[str, Any]:
        """The provider's request body the agent's next step would send for these inputs,
        built exactly as a step builds it; nothing is called or written."""
        run = Run(organization_id=org_id, agent_id=agent_id)
        run.request_config = Run.inputs_config(inputs)
        with self.db.connection() as conn:
            state = found(load(conn, run, 0), f"Agent with ID {agent_id} not found")
        from cairn.run.steps.llm_step import llm_request
        from cairn.run.steps.step_work import StepWork

        request, *_ = llm_request(StepWork(self.step_parts(), state, {}, self._clock()))
        if request is None:
            raise ConflictError("The tool rules leave the agent no tool to call")
        return wire_body(request)


__all__ = ["Engine", "StepKind", "StepOutcome", "step_command"]
