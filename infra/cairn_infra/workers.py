"""The step queue (SQS FIFO, one message group per agent) and the embedding jobs' queue, each
with its DLQ, and their consumers."""

from __future__ import annotations

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


def visibility_for(consumer_timeout: Duration) -> Duration:
    """A queue's visibility timeout for a Lambda consumer: six times its timeout (Lambda,
    "Configuring an Amazon SQS queue to use with Lambda"; Lambda refuses a mapping whose
    queue's visibility is below the function's timeout)."""
    return Duration.seconds(consumer_timeout.to_seconds() * 6)


class StepQueue(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        step_timeout: Duration,
        dead_letter_timeout: Duration,
        removal: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
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
        self.visibility = visibility_for(step_timeout)
        self.queue = sqs.Queue(
            self,
            "Steps",
            fifo=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # What brings back a step whose function died without answering; a step that
            # fails and says so shortens its own wait (5 s, doubling: SqsStepQueue.retry_after).
            visibility_timeout=self.visibility,
            dead_letter_queue=sqs.DeadLetterQueue(
                max_receive_count=MAX_RECEIVES, queue=self.dead_letters
            ),
            removal_policy=removal,
        )

    def connect(self, step: lambda_.IFunction, dead_letter: lambda_.IFunction) -> None:
        """One message is one step; a failed one fails only itself (and its agent's group).

        Batches of one: a batch runs its steps one after another in one invocation, so with
        more, one slow agent would hold up the others' steps behind it, and the batch's
        steps would share one function timeout."""
        step.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=1,
                report_batch_item_failures=True,
                max_concurrency=STEP_CONCURRENCY,
            )
        )
        dead_letter.add_event_source(
            sources.SqsEventSource(
                self.dead_letters, batch_size=10, report_batch_item_failures=True
            )
        )


class EmbedQueue(Construct):
    """The message-embedding jobs: a queue of their own, so a job never sits in its agent's
    step group, where the agent's next turn would wait behind it (a slow or failing
    embedding provider would hold the conversation). FIFO for its deduplication: one job
    per agent per window (`EMBED_WINDOW_SECONDS`), the window's other sends dropped."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        step_timeout: Duration,
        dead_letter_timeout: Duration,
        removal: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        common = {"encryption": sqs.QueueEncryption.SQS_MANAGED, "enforce_ssl": True,
                  "removal_policy": removal}  # fmt: skip
        self.dead_letters = sqs.Queue(
            self, "DeadLetters", fifo=True, visibility_timeout=visibility_for(dead_letter_timeout),
            retention_period=Duration.days(14), **common,
        )  # fmt: skip
        self.queue = sqs.Queue(
            self, "Embeddings", fifo=True, visibility_timeout=visibility_for(step_timeout),
            dead_letter_queue=sqs.DeadLetterQueue(
                max_receive_count=MAX_RECEIVES, queue=self.dead_letters),
            **common,
        )  # fmt: skip

    def connect(self, step: lambda_.IFunction, dead_letter: lambda_.IFunction) -> None:
        """The step function runs the jobs (its handler takes both queues' records)."""
        step.add_event_source(
            sources.SqsEventSource(
                self.queue, batch_size=1, report_batch_item_failures=True,
                max_concurrency=EMBED_CONCURRENCY,
            )
        )  # fmt: skip
        dead_letter.add_event_source(
            sources.SqsEventSource(
                self.dead_letters, batch_size=10, report_batch_item_failures=True
            )
        )
