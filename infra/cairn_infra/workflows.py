"""The approval and sleeptime state machines (JSONPath), defined once.

`cdk deploy` deploys them; the workflow tests and `make dev` execute the ASL synthesised
from these same constructs on moto (cairn.adapters.local.stepfunctions). Every wait, timeout and
retry interval comes from `WorkflowTimings`, so tests run them in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

# Errors of the Lambda service itself, worth another try on any task.
LAMBDA_TRANSIENT = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]


@dataclass(frozen=True)
class WorkflowTimings:
    """In whole seconds, as the ASL has them."""

    # How long an approval request waits for a person before its calls are denied.
    approval_timeout: int = 7 * 24 * 3600
    # How long one sleeptime agent's background run may take before its item fails.
    sleeptime_run_timeout: int = 30 * 60
    retry_interval: int = 2
    retry_attempts: int = 3


def _retry(task: sfn.TaskStateBase, timings: WorkflowTimings, errors: list[str]) -> None:
    task.add_retry(
        errors=errors,
        interval=Duration.seconds(timings.retry_interval),
        max_attempts=timings.retry_attempts,
        backoff_rate=2,
    )


def _call(
    scope: Construct,
    name: str,
    handler: lambda_.IFunction,
    payload: dict[str, object],
    **kw: object,
) -> tasks.LambdaInvoke:
    """A plain Lambda Task whose output is the handler's return value."""
    return tasks.LambdaInvoke(
        scope,
        name,
        lambda_function=handler,
        payload=sfn.TaskInput.from_object(payload),
        payload_response_only=True,
        retry_on_service_exceptions=False,
        **kw,  # type: ignore[arg-type]
    )


def _waiting(
    scope: Construct,
    name: str,
    handler: lambda_.IFunction,
    payload: dict[str, object],
    timeout_seconds: int,
    **kw: object,
) -> tasks.LambdaInvoke:
    """A Task that hands its token to the handler and waits, billing nothing, for it."""
    return tasks.LambdaInvoke(
        scope,
        name,
        lambda_function=handler,
        integration_pattern=sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
        payload=sfn.TaskInput.from_object({**payload, "task_token": sfn.JsonPath.task_token}),
        task_timeout=sfn.Timeout.duration(Duration.seconds(timeout_seconds)),
        retry_on_service_exceptions=False,
        **kw,  # type: ignore[arg-type]
    )


def _state_machine(
    scope: Construct,
    definition: sfn.IChainable,
    logs_retention: logs.RetentionDays | None,
    name: str | None,
) -> sfn.StateMachine:
    logging = None
    if logs_retention is not None:
        group = logs.LogGroup(scope, "Logs", retention=logs_retention)
        logging = sfn.LogOptions(destination=group, level=sfn.LogLevel.ALL)
    return sfn.StateMachine(
        scope,
        "StateMachine",
        state_machine_name=name,
        definition_body=sfn.DefinitionBody.from_chainable(definition),
        state_machine_type=sfn.StateMachineType.STANDARD,  # waits of days; Express caps at 5 min
        tracing_enabled=logs_retention is not None,
        logs=logging,
    )


class ApprovalWorkflow(Construct):
    """Holds a run stopped at `requires_approval` until it is answered, cancelled or timed out.

    Input: {organization_id, agent_id, run_id} (the outbox row's payload).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: lambda_.IFunction,
        timings: WorkflowTimings,
        logs_retention: logs.RetentionDays | None = None,
        state_machine_name: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        ids = {"organization_id.$": "$.organization_id", "run_id.$": "$.run_id"}
        wait = _waiting(
            self,
            "WaitForAnswer",
            handler,
            {"action": "wait", **ids},
            timings.approval_timeout,
            result_path="$.answer",
        )
        # Any failure of the handler (a database that blinked) is retried: a failed wait
        # would lose its timeout-deny. Not the wait's own outcomes: a cancel (the first
        # matching retrier wins, and this one never retries) or the timeout, which a retry
        # would restart and which States.TaskFailed does not match ("Error handling in Step
        # Functions", AWS Step Functions Developer Guide).
        wait.add_retry(errors=["Cancelled"], max_attempts=0)
        _retry(wait, timings, ["States.TaskFailed"])
        deny = _call(
            self,
            "DenyOnTimeout",
            handler,
            {
                "action": "timeout",
                **ids,
                "timeout_seconds": timings.approval_timeout,
            },
            result_path="$.timeout",
        )
        _retry(deny, timings, ["States.ALL"])
        queue = _call(
            self,
            "QueueContinuation",
            handler,
            {
                "action": "continue",
                "organization_id.$": "$.organization_id",
                "answer.$": "$.answer",
            },
            result_path="$.continued",
        )
        _retry(queue, timings, ["States.ALL"])
        wait.add_catch(
            deny.next(sfn.Succeed(self, "TimedOut")),
            errors=["States.Timeout"],
            result_path="$.error",
        )
        wait.add_catch(sfn.Succeed(self, "Cancelled"), errors=["Cancelled"], result_path="$.error")
        self.state_machine = _state_machine(
            self,
            wait.next(queue).next(sfn.Succeed(self, "Answered")),
            logs_retention,
            state_machine_name,
        )


class SleeptimeWorkflow(Construct):
    """Runs every sleeptime agent of a group on the primary's new transcript, in parallel.

    Input: {organization_id, group_id, agent_id, after_message_id, upto_message_id} (the
    transcript lines after one message, up to another). One agent's failure is
    caught in its own Map item: the others and the foreground agent never see it.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: lambda_.IFunction,
        timings: WorkflowTimings,
        logs_retention: logs.RetentionDays | None = None,
        state_machine_name: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        group = {
            "organization_id.$": "$.organization_id",
            "group_id.$": "$.group_id",
            "upto_message_id.$": "$.upto_message_id",
        }
        plan = _call(
            self,
            "Plan",
            handler,
            {"action": "plan", "after_message_id.$": "$.after_message_id", **group},
            result_path="$.plan",
        )
        _retry(plan, timings, ["States.ALL"])
        run = _waiting(
            self,
            "RunSleeptimeAgent",
            handler,
            {"action": "run", "organization_id.$": "$.organization_id", "item.$": "$"},
            timings.sleeptime_run_timeout,
        )
        _retry(run, timings, LAMBDA_TRANSIENT)
        run.add_catch(sfn.Pass(self, "AgentFailed"), errors=["States.ALL"], result_path="$.error")
        fan_out = sfn.Map(
            self,
            "EachSleeptimeAgent",
            items_path="$.plan.items",
            max_concurrency=0,  # all of them at once
            result_path=sfn.JsonPath.DISCARD,
        )
        fan_out.item_processor(run)
        finish = _call(self, "Finish", handler, {"action": "finish", **group}, result_path="$.done")
        _retry(finish, timings, ["States.ALL"])
        self.state_machine = _state_machine(
            self, plan.next(fan_out).next(finish), logs_retention, state_machine_name
        )
