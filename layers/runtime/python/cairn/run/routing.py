"""One publisher for every outbox kind: steps to the step queue, embedding jobs to theirs
(never in an agent's FIFO group, where the agent's next turn would queue behind them), the
rest to the workflows."""

from __future__ import annotations

import json

from cairn.domain.runs import OutboxCommand
from cairn.run.ports import StepQueue, Workflows

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
