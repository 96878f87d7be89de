"""The parts a process shares across invocations, as one record (`Runtime`), holding the
ports (`run/ports.py`); which port an outbox command goes to (`Outlets`); and what the edges
add to the core (`Extensions`).

Kept apart from `assembly/build.py`, which builds it and chooses the adapters: the adapters
(inline queue, workers, tasks) take a Runtime without importing the module that builds them.
Every part is given at construction; nothing is assigned to it afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from cairn.config import Settings
from cairn.domain.runs import OutboxCommand
from cairn.run.ports import DocumentStore, Scheduler, StepQueue, Workflows
from cairn.run.provider_vault import ProviderKeys, ProviderVault
from cairn.run.steps.step import Engine
from cairn.store.db import Database

# One publisher for every outbox kind: steps to the step queue, embedding jobs to theirs (never
# in an agent's FIFO group, where the agent's next turn would queue behind them), the rest to
# the workflows.
WORKFLOW_KINDS = frozenset({"approval_wait", "sleeptime"})


class Outlets:
    """A StepQueue that routes by kind, so the outbox, the sweeper and the dispatcher need
    not know which service a command goes to."""

    def __init__(
        self,
        steps: StepQueue,
        workflows: Workflows,
        embeddings: StepQueue | None = None,
        files: StepQueue | None = None,
    ) -> None:
        self.steps, self.workflows = steps, workflows
        # A stack deployed before the embedding queue existed sends them with the steps.
        self.embeddings = embeddings or steps
        # Files' processing jobs: their own queue, else the embedding jobs' (never the
        # steps': a long PDF must not hold an agent's turn).
        self.files = files or self.embeddings

    def publish(self, command: OutboxCommand) -> None:
        if command.kind in WORKFLOW_KINDS:
            self.workflows.start(command)
        elif command.kind == "embed":
            self.embeddings.publish(command)
        elif command.kind == "file_job":
            self.files.publish(command)
        elif command.kind == "task_result":
            send_result(self.workflows, command.payload)
        else:
            self.steps.publish(command)


def send_result(workflows: Workflows, payload: dict[str, object]) -> None:
    """A background run ended: succeed its workflow item, or fail it with the reason."""
    token = str(payload["task_token"])
    result = {k: payload.get(k) for k in ("run_id", "agent_id", "status", "stop_reason")}
    if payload.get("status") == "completed":
        workflows.succeed(token, result)
    else:
        workflows.fail(token, "RunFailed", json.dumps({**result, "error": payload.get("error")}))


@dataclass(frozen=True)
class QueueKind:
    """One kind of queue message: its shape, what it does (returns a word for the log;
    raises so the queue redelivers), and what its dead letter means."""

    shape: type[BaseModel]
    run: Callable[[Runtime, dict[str, Any], OutboxCommand | None], str]
    dead: Callable[[Runtime, dict[str, Any], str, int], str]


# Around every step a worker runs: (runtime, organization, the step message) -> a context
# the step runs inside (a channel's typing indicator).
AroundStep = Callable[["Runtime", str, dict[str, Any]], AbstractContextManager[None]]


# One of the sweeper's phases: (runtime, errors by name for what failed within it) -> what it
# did; raising fails the phase as a whole.
SweepPhase = Callable[["Runtime", dict[str, str]], object]


@dataclass(frozen=True)
class Extensions:
    """What the edges (channels, integrations) and the background jobs add to the core,
    given at assembly: the core names none of them.

    `kinds`: queue messages by their `kind`; `around_step`: contexts a queued step runs in;
    `sweep`: the sweeper's phases, by name. (What a run's end starts, the engine's
    `run_end`, is given to the engine, which has no Runtime.)"""

    kinds: Mapping[str, QueueKind] = field(default_factory=dict)
    around_step: tuple[AroundStep, ...] = ()
    sweep: tuple[tuple[str, SweepPhase], ...] = ()


@dataclass
class Runtime:
    settings: Settings
    db: Database
    engine: Engine
    queue: Outlets  # every outbox kind: steps to the queue, workflows to Step Functions
    workflows: Workflows
    vault: ProviderVault | None = None  # organizations' own provider keys
    provider_keys: ProviderKeys | None = None
    documents: DocumentStore | None = None  # the originals of files in folders
    scheduler: Scheduler | None = None  # fires scheduled messages on time (AWS)
    # What a request holds while it waits (a sleep between polls, a model or embedding call,
    # an image's download): the local stack's API is a few environments shared by every
    # request, so it lets other requests in meanwhile (`local.lambdas.released`); on Lambda
    # each request has an environment of its own and holds nothing.
    yielding: Callable[[], AbstractContextManager[None]] = nullcontext
    extensions: Extensions = field(default_factory=Extensions)
