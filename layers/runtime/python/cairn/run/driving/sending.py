"""Sending messages: a sync send runs its turn's steps in the caller while its budget lasts
(the rest on the queue); an async one puts its first step on the queue. And Letta's
multi-agent tools, the sending side (agent_messages.py says how they work): the queued start
of an agent's run on another agent's async message, and the Messenger that runs an agent's
turn for a sender waiting on its reply (a sync step hands it to the tools it runs)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol

from cairn.domain.messages import Message
from cairn.domain.runs import TERMINAL_RUN_STATUSES, OutboxCommand, Run, RunOptions
from cairn.embeddings.base import Embedder
from cairn.errors import CairnError, NotFoundError
from cairn.llm import deadline
from cairn.llm.deadline import DeadlineReached
from cairn.llm.types import Delta, LLMError, MessageDelta
from cairn.run.backends import agent_messages
from cairn.run.backends.agent_messages import Reply
from cairn.run.driving import lifecycle
from cairn.run.driving.dispatch import after_step, defer, publish_and_mark, wake
from cairn.run.driving.lifecycle import StartedRun
from cairn.run.runtime import Runtime
from cairn.run.steps.step import StepOutcome
from cairn.store import messages, outbox, runs
from cairn.store.claim import Claim
from cairn.store.db import DuplicateKey

logger = logging.getLogger(__name__)

# Polls start quick (a queued second step usually lands within milliseconds) and back off
# so a long run costs a query every 100 ms at most.
FIRST_POLL_SECONDS, MAX_POLL_SECONDS = 0.003, 0.1


class Sent(NamedTuple):
    run: Run
    # Every message of the run, when its turn ended in the step run here; else None.
    messages: list[Message] | None = None


class Listener(Protocol):
    """Who reads a turn as it runs (a stream): the model's answer piece by piece (if it
    wants `tokens`), each step's stored messages once committed, and whether it is still
    there to read."""

    tokens: bool

    def delta(self, message_id: str, delta: Delta) -> None: ...

    def stored(self, messages: Sequence[Message]) -> None: ...

    def present(self) -> bool: ...


def send(
    rt: Runtime,
    org_id: str,
    agent_id: str,
    inputs: list[Message],
    options: RunOptions,
    *,
    wait: bool,
) -> Sent:
    """Start a run; with `wait`, run its steps here and wait (within the budget) for it."""
    started = begin(rt, org_id, agent_id, inputs, options, wait=wait)
    if not wait:
        return Sent(started.run)
    budget = sync_budget(rt)
    if started.joined:  # the inputs joined a waiting run: its turn answers this caller too
        return Sent(wait_for(rt, org_id, started.run.id, budget))
    waited_from = time.monotonic()
    sent = drive(rt, org_id, agent_id, started, budget)
    if sent.run.status in TERMINAL_RUN_STATUSES:
        return sent  # the turn ended here: nothing to wait for, nothing more to read
    return Sent(wait_for(rt, org_id, sent.run.id, budget - (time.monotonic() - waited_from)))


def begin(
    rt: Runtime,
    org_id: str,
    agent_id: str,
    inputs: list[Message],
    options: RunOptions,
    *,
    wait: bool,
) -> StartedRun:
    """Start a run: with `wait` its first step is claimed for the caller to `drive`, else
    it goes on the queue.

    An answer to an approval also ends the workflow waiting for it; that workflow queues
    the answer's first step (unless it runs here), so a lost answer still times out cleanly.
    """
    if options.background is None:  # a run nobody waits for is a background run
        options = replace(options, background=not wait)
    if options.run_id is None and (again := lifecycle.send_run_id(org_id, agent_id, inputs)):
        options = replace(options, run_id=again)  # the same send twice starts one run
    started = lifecycle.start_run(
        rt.db, org_id, agent_id, inputs, options, run_here=wait, org_cap=rt.settings.org_max_runs
    )
    token, run = started.approval_token, started.run
    if started.joined:
        return started  # its first step is on its way already
    if not wait:
        handed_over = token is not None and rt.workflows.succeed(token, {"run_id": run.id})
        if not handed_over:
            publish_and_mark(rt.db, rt.queue, started.command)
    elif token is not None:
        rt.workflows.succeed(token, {"run_id": run.id})
    return started


def drive(
    rt: Runtime,
    org_id: str,
    agent_id: str,
    started: StartedRun,
    budget: float,
    listener: Listener | None = None,
) -> Sent:
    """Run a started run's steps here, one after another, while the budget lasts (and the
    listener, if any, is there): no queue hop and no polling between them. The run holds
    its agent from its start. What is left when this stops goes on the queue; the run is
    returned as the last step here left it."""
    stored: list[Message] = []
    run, step, claimed = started.run, started.command, started.first_claim
    on_delta = listener.delta if listener is not None and listener.tokens else None
    with deadline.within(budget):
        while True:
            with rt.yielding():
                outcome = _step_here(rt, org_id, agent_id, run.id, step, claimed, on_delta)
            if outcome is None:  # out of time: a worker takes the step
                return Sent(wait_for(rt, org_id, run.id, 0))
            if step is not started.command:
                _taken(rt, step)
            stored.extend(outcome.messages)
            if listener is not None:
                listener.stored(outcome.messages)
            following = outcome.next_command
            here = listener is None or listener.present()
            if outcome.status != "committed" or following is None or deadline.passed() or not here:
                # the rest goes on the queue
                after_step(rt.db, rt.queue, step, outcome, cap=rt.settings.org_max_runs)
                break
            after_step(
                rt.db, rt.queue, step, outcome, continue_here=True, cap=rt.settings.org_max_runs
            )
            step, claimed = following, None
    if outcome.run is not None:
        return Sent(outcome.run, stored if outcome.run.status in TERMINAL_RUN_STATUSES else None)
    return Sent(wait_for(rt, org_id, run.id, 0))


def sync_budget(rt: Runtime) -> float:
    """The sync budget, or less if the invocation itself ends sooner (the api handler's
    deadline)."""
    left = deadline.seconds_left()
    if left is None:
        return rt.settings.sync_budget_seconds
    return min(rt.settings.sync_budget_seconds, max(left, 0.0))


def _step_here(
    rt: Runtime,
    org_id: str,
    agent_id: str,
    run_id: str,
    command: OutboxCommand,
    claimed: Claim | None,
    on_delta: MessageDelta | None,
) -> StepOutcome | None:
    """One step of a sync send, in the caller; None when the model ran out of time and the
    step went to the queue instead."""
    try:
        return rt.engine.step(
            org_id,
            run_id,
            command.payload["step_index"],
            claimed=claimed,
            on_delta=on_delta,
            messenger=Messenger(rt),  # the multi-agent tools run other agents' turns
            agent_id=agent_id,
        )
    except DeadlineReached:
        defer(rt.db, command)
        publish_and_mark(rt.db, rt.queue, command)
        return None
    except LLMError as err:
        # The caller is waiting and the SDK has retried already: answer as Letta does.
        rt.engine.fail_run(org_id, run_id, "llm_api_error", str(err), kind=err.kind)
        wake(rt.db, rt.queue, org_id, agent_id)
        raise
    except Exception:
        _hand_over(rt, command)
        raise


def _hand_over(rt: Runtime, command: OutboxCommand) -> None:
    """A step that failed here goes to a worker: unsent again, for the sweeper to deliver.
    When the database itself is what failed, that cannot be written: the step goes on the
    queue as it is, whose worker retries it until the database is back (else the run
    stayed `created` until the stall sweep, 30 minutes, and a client that sent again had
    its message answered twice)."""
    try:
        defer(rt.db, command)
    except Exception as err:
        logger.warning("the failed step %s goes to the queue: %s", command.dedup_key, err)
        rt.queue.publish(command)


def _taken(rt: Runtime, command: OutboxCommand) -> None:
    """A continuation that ran here is sent in effect (until then, were this process to
    die, the sweeper would deliver it from the outbox)."""
    if command.id is not None:
        with rt.db.connection() as conn:
            outbox.mark_sent(conn, command.organization_id, command.id, command.attempts)


def wait_for(rt: Runtime, org_id: str, run_id: str, budget_seconds: float) -> Run:
    deadline = time.monotonic() + budget_seconds
    interval = FIRST_POLL_SECONDS
    while True:
        with rt.db.connection() as conn:
            run = runs.get_run(conn, org_id, run_id)
        assert run is not None
        if run.status in TERMINAL_RUN_STATUSES or time.monotonic() >= deadline:
            return run
        with rt.yielding():
            time.sleep(interval)
        interval = min(interval * 1.5, MAX_POLL_SECONDS)


class Released:
    """An embedder whose calls give the function back to other callers while they run, as a
    model call of a sync send does: loading the local model or a slow embedding provider
    must not hold every other request of the API (locally one invocation runs at a time)."""

    def __init__(
        self, embedder: Embedder, yielding: Callable[[], AbstractContextManager[None]]
    ) -> None:
        self._embedder, self._yielding = embedder, yielding
        self.model, self.dim = embedder.model, embedder.dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._yielding():
            return self._embedder.embed(texts)


# -- the multi-agent tools' sending side ----------------------------------------------------


def deliver(rt: Runtime, payload: dict[str, Any]) -> str:
    """Start the run of an async message, once: a redelivery finds the run it started."""
    org, agent_id, run_id = payload["organization_id"], payload["agent_id"], payload["run_id"]
    with rt.db.connection() as conn:
        if runs.get_run(conn, org, run_id) is not None:
            return "already delivered"
    message = agent_messages.incoming(org, agent_id, payload["text"], payload["sender_name"])
    meta = agent_messages.metadata(payload["sender_id"], payload["sender_run_id"])
    options = RunOptions(background=True, run_id=run_id, metadata=meta)
    try:
        started = lifecycle.start_run(
            rt.db, org, agent_id, [message], options, org_cap=rt.settings.org_max_runs
        )
    except DuplicateKey:  # a delivery beside this one started it a moment ago
        return "already delivered"
    except CairnError as err:  # deleted since, or waiting for an approval: it cannot take it
        logger.warning(
            "message from %s to %s not delivered: %s", payload["sender_id"], agent_id, err
        )
        return "not delivered"
    publish_and_mark(rt.db, rt.queue, started.command)
    return "delivered"


@dataclass
class Messenger:
    """Runs an agent's turn here for a sender that waits (the first steps in this process,
    as a sync send runs them; the rest from the queue) and reads what it said."""

    rt: Runtime

    def ask(
        self,
        org_id: str,
        agent_id: str,
        inputs: list[Message],
        *,
        run_id: str,
        metadata: dict[str, Any],
        budget_seconds: float,
    ) -> Reply:
        rt, until = self.rt, time.monotonic() + budget_seconds
        with rt.db.connection() as conn:
            run = runs.get_run(conn, org_id, run_id)
        if run is None:  # else the sender's step came again: wait for the run it started
            options = RunOptions(background=False, run_id=run_id, metadata=metadata)
            try:
                started = begin(rt, org_id, agent_id, inputs, options, wait=True)
            except DuplicateKey:  # started beside this one: wait for it below
                started = None
            except CairnError as err:
                kind = "NoResultFound" if isinstance(err, NotFoundError) else type(err).__name__
                return Reply(agent_id, None, [], str(err), kind)
            if started is not None:
                with suppress(LLMError):  # the run has failed: read as it ended, below
                    run = drive(rt, org_id, agent_id, started, budget_seconds).run
        if run is None or run.status not in TERMINAL_RUN_STATUSES:
            run = wait_for(rt, org_id, run_id, max(until - time.monotonic(), 0.0))
        with rt.db.connection() as conn:
            said = messages.for_runs(conn, org_id, [run_id])
        return Reply(agent_id, run, said)
