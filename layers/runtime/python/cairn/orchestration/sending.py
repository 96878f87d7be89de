"""Sending messages: a run whose first step runs in the caller, the rest on the queue."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

from cairn.domain.messages import Message
from cairn.domain.runs import TERMINAL_RUN_STATUSES, Run
from cairn.llm import deadline
from cairn.llm.deadline import DeadlineReached
from cairn.llm.types import LLMError
from cairn.orchestration.dispatch import after_step, defer, publish_and_mark, wake
from cairn.orchestration.parts import Runtime
from cairn.store import runs

# Polls start quick (a queued second step usually lands within milliseconds) and back off
# so a long run costs a query every 100 ms at most.
FIRST_POLL_SECONDS, MAX_POLL_SECONDS = 0.003, 0.1
# How a waiting send sleeps; the local stack lets other requests in meanwhile.
pause: Callable[[float], None] = time.sleep


class Sent(NamedTuple):
    run: Run
    # Every message of the run, when its turn ended in the step run here; else None.
    messages: list[Message] | None = None


def send(
    rt: Runtime,
    org_id: str,
    agent_id: str,
    inputs: list[Message],
    *,
    max_steps: int,
    wait: bool,
    metadata: dict[str, object] | None = None,
    compact_only: bool = False,
) -> Sent:
    """Start a run; with `wait`, run its first step here and wait (within the budget) for it.

    An answer to an approval also ends the workflow waiting for it; that workflow queues
    the answer's first step (unless it runs here), so a lost answer still times out cleanly.
    """
    run, command, token, first_claim = rt.engine.start_run(
        org_id,
        agent_id,
        inputs,
        max_steps=max_steps,
        background=not wait,
        metadata=metadata,
        run_here=wait,
        compact_only=compact_only,
    )
    if not wait:
        handed_over = token is not None and rt.workflows.succeed(token, {"run_id": run.id})
        if not handed_over:
            publish_and_mark(rt.db, rt.queue, command)
        return Sent(run)
    # The budget, or less if the invocation itself ends sooner (the api handler's deadline).
    left = deadline.seconds_left()
    budget = rt.settings.sync_budget_seconds if left is None else min(
        rt.settings.sync_budget_seconds, max(left, 0.0))  # fmt: skip
    waited_from = time.monotonic()
    try:
        if token is not None:
            rt.workflows.succeed(token, {"run_id": run.id})
        # The run holds its agent from here (claimed with the run): any failure below leaves
        # the step to the sweeper, which finds the lease its own. The model must answer
        # within the budget; past it the step goes to a worker and the caller gets the run.
        with deadline.within(budget):
            outcome = rt.engine.step(org_id, run.id, 0, claimed=first_claim)
    except DeadlineReached:
        defer(rt.db, command)
        publish_and_mark(rt.db, rt.queue, command)
        return Sent(wait_for(rt, org_id, run.id, 0))
    except LLMError as err:
        # The caller is waiting and the SDK has retried already: answer as Letta does.
        rt.engine.fail_run(org_id, run.id, "llm_api_error", str(err), kind=err.kind)
        wake(rt.db, rt.queue, org_id, agent_id)
        raise
    except Exception:
        defer(rt.db, command)  # unsent again: the sweeper delivers it to a worker
        raise
    # Busy (another run holds the agent): the command waits in the outbox for that run to end.
    after_step(rt.db, rt.queue, command, outcome)
    if outcome.run is not None and outcome.run.status in TERMINAL_RUN_STATUSES:
        # The turn ended in its first step: nothing to wait for, nothing more to read.
        return Sent(outcome.run, list(outcome.messages))
    return Sent(wait_for(rt, org_id, run.id, budget - (time.monotonic() - waited_from)))


def wait_for(rt: Runtime, org_id: str, run_id: str, budget_seconds: float) -> Run:
    deadline = time.monotonic() + budget_seconds
    interval = FIRST_POLL_SECONDS
    while True:
        with rt.db.connection() as conn:
            run = runs.get_run(conn, org_id, run_id)
        assert run is not None
        if run.status in TERMINAL_RUN_STATUSES or time.monotonic() >= deadline:
            return run
        pause(interval)
        interval = min(interval * 1.5, MAX_POLL_SECONDS)
