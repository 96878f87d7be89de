"""The step queue on SQS FIFO: one message per step, in order per agent, deduplicated. The
embedding jobs' queue takes the same messages (a FIFO queue of its own)."""

from __future__ import annotations

import json
from typing import Any

from cairn.domain.runs import OutboxCommand

RETRY_BASE_SECONDS = 5
RETRY_MAX_SECONDS = 300


class SqsStepQueue:
    def __init__(self, queue_url: str, client: Any | None = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("sqs")
        self.queue_url = queue_url
        self._client = client

    def publish(self, command: OutboxCommand) -> None:
        self._client.send_message(QueueUrl=self.queue_url, **message_fields(command))

    def publish_many(self, commands: list[OutboxCommand]) -> list[OutboxCommand]:
        """Ten to a request (SQS's batch), in order; returns those SQS refused."""
        refused: list[OutboxCommand] = []
        for start in range(0, len(commands), 10):
            chunk = commands[start : start + 10]
            entries = [{"Id": str(n), **message_fields(c)} for n, c in enumerate(chunk)]
            answer = self._client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            refused += [chunk[int(f["Id"])] for f in answer.get("Failed", ())]
        return refused

    def retry_after(self, receipt_handle: str, receives: int) -> float:
        """Bring a failed step's message back after a short backoff instead of the queue's
        visibility timeout (six times the function's, for steps that die without answering):
        5, 10, 20, 40 s... up to `RETRY_MAX_SECONDS`. Returns the delay chosen."""
        seconds: float = min(RETRY_BASE_SECONDS * 2 ** max(receives - 1, 0), RETRY_MAX_SECONDS)
        self._client.change_message_visibility(
            QueueUrl=self.queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=seconds
        )
        return seconds


def message_fields(command: OutboxCommand) -> dict[str, str]:
    return {
        "MessageBody": json.dumps(command.payload),
        # Steps of one agent never run side by side, and come in the order they were made.
        "MessageGroupId": command.agent_id,
        # "run:step:attempt": a command published twice in one attempt (a retried send) is
        # dropped inside SQS's 5-minute window. A step put back to wait for its busy agent
        # is published again as a new attempt, which SQS must not drop.
        "MessageDeduplicationId": f"{command.dedup_key}-{command.attempts}".replace(":", "-"),
    }


def sqs_client(endpoint_url: str | None = None, region: str | None = None) -> Any:
    """An SQS client; `endpoint_url` points it at moto for the local stack."""
    import boto3

    return boto3.client("sqs", endpoint_url=endpoint_url, region_name=region)
