"""The step queue (SQS FIFO, one message group per agent) and the embedding jobs' queue, each
with its DLQ, and their consumers."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

MAX_RECEIVES = 5
# At most this many step functions at once (the event source mapping's maximum concurrency),
# so a flood of queued steps leaves the account's concurrency to the API; the rest wait
# in the queue, where waiting costs nothing.
STEP_CONCURRENCY = 50
# Embedding jobs are idempotent and wait for nothing: a few at a time is enough.
EMBED_CONCURRENCY = 5
# Files' jobs parse and embed whole documents: a few at a time, so one tenant's bulk upload
# cannot take the embedding provider's quota from every agent.
FILES_CONCURRENCY = 4
HIGH_THROUGHPUT: dict[str, Any] = {
    "fifo_throughput_limit": sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
    "deduplication_scope": sqs.DeduplicationScope.MESSAGE_GROUP,
}


def visibility_for(consumer_timeout: Duration) -> Duration:
    """A queue's visibility timeout for a Lambda consumer: six times its timeout (Lambda,
    "Configuring an Amazon SQS queue to use with Lambda"; Lambda refuses a mapping whose
    queue's visibility is below the function's timeout)."""
    return Duration.seconds(consumer_timeout.to_seconds() * 6)


class WorkQueue(Construct):
    """An SQS FIFO queue with its dead-letter queue, run by a function one message at a
    time (at most `concurrency` at once), its dead letters by another. The steps' queue (a
    group per agent) and the embedding jobs' (their own, so a job never sits in its agent's
    step group, where the next turn would wait behind a slow or failing embedding provider;
    FIFO for its deduplication: one job per agent per window) are two of these.

    Batches of one: a batch runs its messages one after another in one invocation, so with
    more, one slow agent would hold up the others' steps behind it, and the batch's steps
    would share one function timeout."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        queue_id: str,
        consumer_timeout: Duration,
        dead_letter_timeout: Duration,
        concurrency: int,
        removal: RemovalPolicy,
        high_throughput: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.concurrency = concurrency
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            fifo=True,
            visibility_timeout=visibility_for(dead_letter_timeout),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=removal,
        )
        self.visibility = visibility_for(consumer_timeout)
        self.queue = sqs.Queue(
            self,
            queue_id,
            fifo=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # What brings back a message whose function died without answering; a step that
            # fails and says so shortens its own wait (5 s, doubling: SqsStepQueue.retry_after).
            visibility_timeout=self.visibility,
            dead_letter_queue=sqs.DeadLetterQueue(
                max_receive_count=MAX_RECEIVES, queue=self.dead_letters
            ),
            removal_policy=removal,
            # FIFO high throughput: the send and receive quotas hold per message group (an
            # agent) instead of for the whole queue (300 sends a second without batching).
            **(HIGH_THROUGHPUT if high_throughput else {}),
        )

    def connect(self, consumer: lambda_.IFunction, dead_letter: lambda_.IFunction) -> None:
        """One message is one invocation; a failed one fails only itself (and its group)."""
        consumer.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=1,
                report_batch_item_failures=True,
                max_concurrency=self.concurrency,
            )
        )
        dead_letter.add_event_source(
            sources.SqsEventSource(
                self.dead_letters, batch_size=10, report_batch_item_failures=True
            )
        )
