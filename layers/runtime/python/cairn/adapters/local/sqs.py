"""SQS for the local stack: moto's server, the FIFO step queue with its DLQ, and a poller
that feeds the step handler SQS-shaped batches as Lambda's event source mapping would
(moto's own SQS->Lambda trigger ignores partial batch failures, so it is not used)."""

from __future__ import annotations

import json
import logging
import socket
import threading
from typing import Any

from cairn.adapters.local.lambdas import invoke

logger = logging.getLogger(__name__)
REGION = "us-east-1"
# A message taken by a worker stays hidden this long, longer than any step runs (on AWS the
# queue's visibility timeout covers the step function's timeout): a step still running must
# not be delivered to a second worker.
LOCAL_VISIBILITY_SECONDS = 900
# A failed step comes back after this long (the poller shortens its message's visibility).
LOCAL_RETRY_SECONDS = 2
MAX_RECEIVES = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_moto() -> tuple[Any, str]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return server, f"http://127.0.0.1:{port}"


def create_step_queues(sqs: Any, name: str = "cairn-steps") -> tuple[str, str]:
    """The step queue (FIFO, ordered per agent) and its dead-letter queue."""
    dlq = sqs.create_queue(QueueName=f"{name}-dlq.fifo", Attributes={"FifoQueue": "true"})
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq["QueueUrl"], AttributeNames=["QueueArn"])
    redrive = json.dumps(
        {"deadLetterTargetArn": dlq_arn["Attributes"]["QueueArn"], "maxReceiveCount": MAX_RECEIVES}
    )
    main = sqs.create_queue(
        QueueName=f"{name}.fifo",
        Attributes={
            "FifoQueue": "true",
            "VisibilityTimeout": str(LOCAL_VISIBILITY_SECONDS),
            "RedrivePolicy": redrive,
        },
    )
    return main["QueueUrl"], dlq["QueueUrl"]


def to_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    records = []
    for m in messages:
        attributes = m.get("Attributes", {})
        records.append(
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {
                    "ApproximateReceiveCount": attributes.get("ApproximateReceiveCount", "1"),
                    "SentTimestamp": attributes.get("SentTimestamp", "0"),
                    "SenderId": attributes.get("SenderId", "local"),
                    "ApproximateFirstReceiveTimestamp": attributes.get(
                        "ApproximateFirstReceiveTimestamp", "0"
                    ),
                    "MessageGroupId": attributes.get("MessageGroupId", ""),
                    "MessageDeduplicationId": attributes.get("MessageDeduplicationId", ""),
                    "SequenceNumber": attributes.get("SequenceNumber", "0"),
                },
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
        )
    return {"Records": records}


class Poller(threading.Thread):
    """Receive a batch, hand it to a handler, delete what succeeded; failures come back."""

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        function: str,
        *,
        attribute: str = "handler",
        batch_size: int = 10,
        environment: int = 0,
    ) -> None:
        super().__init__(name=f"poll-{function}-{attribute}-{environment}", daemon=True)
        self.environment = environment
        self.sqs, self.queue_url, self.function, self.attribute = (
            sqs,
            queue_url,
            function,
            attribute,
        )
        self.batch_size = batch_size
        self.stopping = threading.Event()
        self.arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]

    def poll_once(self, wait_seconds: int = 1) -> int:
        got = self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=self.batch_size,
            WaitTimeSeconds=wait_seconds,
            AttributeNames=["All"],
        ).get("Messages", [])
        if not got:
            return 0
        try:
            result = invoke(
                self.function,
                to_event(got, self.arn),
                attribute=self.attribute,
                environment=self.environment,
            )
            failed = {f["itemIdentifier"] for f in (result or {}).get("batchItemFailures", [])}
        except Exception:
            logger.exception("%s failed a whole batch", self.function)
            failed = {m["MessageId"] for m in got}
        for m in got:
            if m["MessageId"] not in failed:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
            else:
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url,
                    ReceiptHandle=m["ReceiptHandle"],
                    VisibilityTimeout=LOCAL_RETRY_SECONDS,
                )
        return len(got)

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.poll_once()
            except Exception:  # the poller outlives a bad batch, as the event source mapping does
                logger.exception("polling %s failed", self.queue_url)
                self.stopping.wait(1)
