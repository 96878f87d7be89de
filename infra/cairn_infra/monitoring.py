"""What an operator watches (one dashboard) and what needs a person (alarms to one SNS topic):
dead-lettered steps, function errors and throttles, tails close to a timeout, a queue that
stops draining, failed workflows, the database or its proxy running out of room, and from
the steps' own metrics (per organization too) a slow model and runs that keep failing.

Alarms must stay quiet at normal load: a slow tail must hold for 15 minutes, and the API's
is measured against the request's cut at 29 s, since a sync send waiting 25 s for a slow
model is the design, not an incident."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

# p99 durations worth a look, as a share of each function's timeout; the API's sync sends
# wait up to CAIRN_SYNC_BUDGET_SECONDS (25 s) by design, so only a tail at its cut counts.
SLOW_SHARE = {"api": 0.97}
SLOW_SHARE_DEFAULT = 0.8
# A step waiting this long in the queue means the steps are not keeping up (or are stuck).
QUEUE_AGE_SECONDS = 15 * 60
METRICS_NAMESPACE = "Cairn"
# The steps' own metrics worth a person: model calls over a minute at p99, and runs failing
# steadily (each for 15 minutes).
MODEL_P99_MS = 60_000
RUNS_FAILED = 10
# The small shape's function alarms: the two that serve every turn.
COMPACT_FUNCTIONS = ("api", "step")


@dataclass(frozen=True)
class Watched:
    functions: dict[str, lambda_.Function]
    step_logs: logs.ILogGroup
    steps: sqs.IQueue
    dead_letters: sqs.IQueue
    state_machines: dict[str, sfn.StateMachine]
    cluster: rds.DatabaseCluster
    proxy: rds.DatabaseProxy | None  # None: the functions connect to the cluster
    max_capacity: float
    # The small shape's watch: the alarms that say a person must act, each once for the
    # stack (not each function's errors, throttles and tails), and no dashboard unless
    # asked for: at its size they were the largest line of its idle bill.
    compact: bool = False
    dashboard: bool = True


class Alarms(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, watched: Watched) -> None:
        super().__init__(scope, construct_id)
        w = watched
        self.topic = sns.Topic(self, "Alarms", enforce_ssl=True, display_name="Cairn alarms")
        notify = actions.SnsAction(self.topic)
        minute, five = Duration.minutes(1), Duration.minutes(5)

        def alarm(
            name: str, metric: cw.IMetric, threshold: float, periods: int = 1, **kw: object
        ) -> cw.Alarm:
            made = cw.Alarm(
                self,
                name,
                metric=metric,
                threshold=threshold,
                evaluation_periods=periods,
                comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
                **kw,  # type: ignore[arg-type]
            )
            made.add_alarm_action(notify)
            return made

        alarm(
            "DeadLetteredSteps",
            w.dead_letters.metric_approximate_number_of_messages_visible(period=minute),
            1,
            alarm_description="A step failed on every delivery; its run is marked failed.",
        )
        alarm(
            "StepQueueAge",
            w.steps.metric_approximate_age_of_oldest_message(period=five),
            QUEUE_AGE_SECONDS,
            periods=3,
            alarm_description="Steps wait over 15 minutes: workers are failing or saturated.",
        )
        for key, fn in w.functions.items():
            if w.compact and key not in COMPACT_FUNCTIONS:
                continue
            alarm(f"{key}Errors", fn.metric_errors(period=five), 1)
            if w.compact:
                continue
            alarm(f"{key}Throttles", fn.metric_throttles(period=five), 1)
            if fn.timeout is not None:
                share = SLOW_SHARE.get(key, SLOW_SHARE_DEFAULT)
                alarm(
                    f"{key}P99Duration",
                    fn.metric_duration(period=five, statistic="p99"),
                    fn.timeout.to_milliseconds() * share,
                    periods=3,
                )
        for kind, machine in w.state_machines.items():
            alarm(
                f"{kind}ExecutionsFailed",
                machine.metric_failed(period=five),
                1,
                alarm_description=f"A {kind} workflow ended in failure.",
            )
            if not w.compact:
                alarm(f"{kind}ExecutionsTimedOut", machine.metric_timed_out(period=five), 1)
        alarm(
            "DatabaseCapacity",
            w.cluster.metric_serverless_database_capacity(period=five),
            w.max_capacity * 0.9,
            periods=3,
            alarm_description="Aurora is near its maximum ACUs: raise max_capacity.",
        )
        if w.proxy is not None:
            proxy = {"ProxyName": w.proxy.db_proxy_name}
            connections = cw.Metric(
                namespace="AWS/RDS",
                metric_name="DatabaseConnections",
                dimensions_map=proxy,
                period=five,
                statistic="Maximum",
            )
            allowed = cw.Metric(
                namespace="AWS/RDS",
                metric_name="MaxDatabaseConnectionsAllowed",
                dimensions_map=proxy,
                period=five,
                statistic="Minimum",
            )
            use = cw.MathExpression(
                expression="100 * connections / allowed",
                using_metrics={"connections": connections, "allowed": allowed},
                label="proxy connections in use (%)",
                period=five,
            )
            alarm(
                "ProxySaturation",
                use,
                90,
                periods=3,
                alarm_description="RDS Proxy uses 90% of the connections allowed.",
            )
            connection_graph = ("Proxy connections", [connections, allowed])
        else:  # the functions' own connections to the cluster
            connection_graph = (
                "Database connections",
                [w.cluster.metric_database_connections(period=five)],
            )

        # Runs failed by the model provider: one log line each (run/steps/step_work.py).
        llm_errors = logs.MetricFilter(
            self,
            "LlmErrors",
            log_group=w.step_logs,
            metric_namespace=METRICS_NAMESPACE,
            metric_name="LlmApiErrors",
            filter_pattern=logs.FilterPattern.literal('"failed: llm_api_error"'),
            metric_value="1",
        ).metric(period=five, statistic="Sum")

        # The steps' own metrics (CAIRN_METRICS=emf: cairn/adapters/aws/metrics.py), for the
        # whole stack; each also exists per organization (dimension `organization_id`).
        def cairn(name: str, statistic: str = "Sum", period: Duration = five) -> cw.Metric:
            return cw.Metric(
                namespace=METRICS_NAMESPACE,
                metric_name=name,
                dimensions_map={"service": "cairn"},
                statistic=statistic,
                period=period,
            )

        alarm(
            "ModelLatencyP99",
            cairn("ModelLatency", "p99"),
            MODEL_P99_MS,
            periods=3,
            alarm_description="Model calls take over a minute at p99: a provider is degraded.",
        )
        alarm(
            "RunsFailed",
            cairn("RunsFailed"),
            RUNS_FAILED,
            periods=3,
            alarm_description="Runs keep failing (10 or more every 5 minutes for 15 minutes).",
        )

        def by_organization(name: str) -> cw.MathExpression:
            # One line per organization that published it (CloudWatch's SEARCH: dashboards
            # only, so the alarms above read the stack's own dimension).
            return cw.MathExpression(
                expression=(
                    f"SEARCH('{{{METRICS_NAMESPACE},organization_id,service}} "
                    f"MetricName=\"{name}\"', 'Sum', 300)"
                ),
                using_metrics={},
                label=name,
                period=five,
            )

        step, api, approval = w.functions["step"], w.functions["api"], w.state_machines["approval"]
        rows: list[list[tuple[str, Sequence[cw.IMetric]]]] = [
            [
                ("Steps per minute", [step.metric_invocations(period=minute)]),
                (
                    "Step duration (ms)",
                    [step.metric_duration(period=minute, statistic=p) for p in ("p50", "p99")],
                ),
                (
                    "Oldest queued step (s)",
                    [w.steps.metric_approximate_age_of_oldest_message(period=minute)],
                ),
            ],
            [
                (
                    "Dead-lettered steps",
                    [w.dead_letters.metric_approximate_number_of_messages_visible(period=minute)],
                ),
                ("Runs failed by the provider", [llm_errors]),
                (
                    "Approval waits started and answered",
                    [
                        approval.metric("ExecutionsStarted", period=five),
                        approval.metric_succeeded(period=five),
                    ],
                ),
            ],
            [
                connection_graph,
                (
                    "Aurora capacity (ACU)",
                    [w.cluster.metric_serverless_database_capacity(period=minute)],
                ),
                (
                    "API errors and throttles",
                    [api.metric_errors(period=minute), api.metric_throttles(period=minute)],
                ),
            ],
        ]
        rows.append(
            [
                ("Tokens by organization (input)", [by_organization("InputTokens")]),
                (
                    "Model and step latency (ms)",
                    [cairn("ModelLatency", p, minute) for p in ("p50", "p99")]
                    + [cairn("StepLatency", "p99", minute)],
                ),
                (
                    "Throttles and failed runs",
                    [cairn("Throttles", period=minute), cairn("RunsFailed", period=minute)],
                ),
            ]
        )
        if not w.dashboard:
            return
        cw.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"{Stack.of(self).stack_name}-cairn",
            widgets=[[_graph(title, metrics) for title, metrics in row] for row in rows],
        )


def _graph(title: str, metrics: Sequence[cw.IMetric]) -> cw.GraphWidget:
    return cw.GraphWidget(title=title, left=metrics, width=8)
