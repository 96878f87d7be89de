"""Alarms on what needs a person: dead-lettered steps, function errors, throttles and slow
tails, and the database running out of capacity. They notify one SNS topic."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_rds as rds
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

# p99 durations worth a look, as a share of each function's timeout.
SLOW_SHARE = 0.8


class Alarms(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: dict[str, lambda_.Function],
        dead_letters: sqs.IQueue,
        cluster: rds.DatabaseCluster,
        max_capacity: float,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, "Alarms", enforce_ssl=True, display_name="Cairn alarms")
        notify = actions.SnsAction(self.topic)
        five_minutes = Duration.minutes(5)

        def alarm(name: str, metric: cw.IMetric, threshold: float, **kw: object) -> cw.Alarm:
            made = cw.Alarm(
                self,
                name,
                metric=metric,
                threshold=threshold,
                evaluation_periods=1,
                comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
                **kw,  # type: ignore[arg-type]
            )
            made.add_alarm_action(notify)
            return made

        alarm(
            "DeadLetteredSteps",
            dead_letters.metric_approximate_number_of_messages_visible(period=Duration.minutes(1)),
            1,
            alarm_description="A step failed on every delivery; its run is marked failed.",
        )
        for key, fn in functions.items():
            alarm(f"{key}Errors", fn.metric_errors(period=five_minutes), 1)
            alarm(f"{key}Throttles", fn.metric_throttles(period=five_minutes), 1)
            if fn.timeout is not None:
                limit_ms = fn.timeout.to_milliseconds() * SLOW_SHARE
                alarm(
                    f"{key}P99Duration",
                    fn.metric_duration(period=five_minutes, statistic="p99"),
                    limit_ms,
                )
        alarm(
            "DatabaseCapacity",
            cluster.metric_serverless_database_capacity(period=five_minutes),
            max_capacity * 0.9,
            alarm_description="Aurora is near its maximum ACUs: raise max_capacity.",
        )
