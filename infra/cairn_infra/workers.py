"""The step queue (SQS FIFO, one message group per agent) with its DLQ, and their consumers."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

MAX_RECEIVES = 5


class StepQueue(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, step_timeout: Duration, removal: RemovalPolicy
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            fifo=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=removal,
        )
        self.queue = sqs.Queue(
            self,
            "Steps",
            fifo=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # AWS's advice for Lambda consumers: six times the function's timeout.
            visibility_timeout=Duration.seconds(step_timeout.to_seconds() * 6),
            dead_letter_queue=sqs.DeadLetterQueue(
                max_receive_count=MAX_RECEIVES, queue=self.dead_letters
            ),
            removal_policy=removal,
        )

    def connect(self, step: lambda_.IFunction, dead_letter: lambda_.IFunction) -> None:
        """One message is one step; a failed one fails only itself (and its agent's group)."""
        step.add_event_source(
            sources.SqsEventSource(self.queue, batch_size=10, report_batch_item_failures=True)
        )
        dead_letter.add_event_source(
            sources.SqsEventSource(
                self.dead_letters, batch_size=10, report_batch_item_failures=True
            )
        )
