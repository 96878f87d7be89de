"""Who may do what: the functions' grants on the database, the keys, the queues, the
workflows, the sandbox, Bedrock and the egress proxy, each to the functions that need it."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager

from cairn_infra.database import ADMIN_USER, APP_USER, Database
from cairn_infra.egress import EgressProxy
from cairn_infra.workers import WorkQueue

# Who may send to and answer the workflows: every function that publishes the outbox.
PUBLISHERS = (
    "api",
    "stream",
    "step",
    "step-dead-letter",
    "approval",
    "sleeptime",
    "sweeper",
    "files",
)
# Who touches files' originals: the API stores and deletes them, the files function reads.
DOCUMENT_WRITERS = ("api", "stream")
# The ones that run steps, and so custom tools and model calls.
STEPPING = ("api", "stream", "step")


def grant_access(
    stack: Stack,
    by: Mapping[str, lambda_.Function],
    *,
    database: Database,
    providers: secretsmanager.ISecret,
    sealing: secretsmanager.ISecret,
    queues: tuple[WorkQueue, ...],
    workflows: list[str],
    bedrock_arns: Callable[[str], list[str]],
    bedrock_models: tuple[str, ...],
    egress: EgressProxy | None,
    documents: s3.IBucket,
    schedules: tuple[str, iam.IRole],
) -> None:
    for key, fn in by.items():
        if key == "sandbox":
            continue
        if key == "migrate" and database.app_secret is not None:
            # The schema's owner, through the proxy, and the one who sets the app's password.
            fn.add_environment("CAIRN_DB_IAM_USER", ADMIN_USER)
            fn.add_environment("CAIRN_DB_APP_SECRET_ARN", database.app_secret.secret_arn)
            database.app_secret.grant_read(fn)
            database.grant_connect(fn, ADMIN_USER)
        elif key == "migrate":
            # No proxy: the owner logs in to the cluster with the admin's secret (an IAM
            # login would end its password logins, and the secret's rotation with them), and
            # lets the app role log in with IAM tokens (rds_iam).
            fn.add_environment("CAIRN_DB_SECRET_ARN", database.secret.secret_arn)
            fn.add_environment("CAIRN_DB_IAM_USER", "")  # not the app role's token login
            fn.add_environment("CAIRN_DB_APP_IAM", "true")
            database.secret.grant_read(fn)
        else:
            database.grant_connect(fn, APP_USER)
        providers.grant_read(fn)
    for key in PUBLISHERS:
        for queue in queues:
            queue.queue.grant_send_messages(by[key])
        by[key].add_to_role_policy(
            iam.PolicyStatement(
                # Task tokens carry no ARN: IAM scopes the answers to state machines too.
                actions=[
                    "states:StartExecution",
                    "states:SendTaskSuccess",
                    "states:SendTaskFailure",
                ],
                resources=workflows,
            )
        )
    # Scheduled messages: the API (and the steps, for agents' own) make and delete the
    # EventBridge schedules of their group, passing its role.
    group, role = schedules
    group_schedules = stack.format_arn(
        service="scheduler", resource="schedule", resource_name=f"{group}/*"
    )
    for key in STEPPING:
        by[key].add_to_role_policy(
            iam.PolicyStatement(
                actions=["scheduler:CreateSchedule", "scheduler:DeleteSchedule"],
                resources=[group_schedules],
            )
        )
        role.grant_pass_role(by[key].grant_principal)
    # Exact actions on the bucket's objects (grant_put and its kin add wildcard actions).
    objects = [documents.arn_for_objects("*")]
    for key in DOCUMENT_WRITERS:
        by[key].add_to_role_policy(
            iam.PolicyStatement(actions=["s3:PutObject", "s3:DeleteObject"], resources=objects)
        )
    by["files"].add_to_role_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=objects))
    # Organizations' own provider keys: the API functions keep them (create, rotate,
    # delete, read to list models); steps read them. Only secrets under the prefix.
    own_keys = stack.format_arn(
        service="secretsmanager",
        resource="secret",
        resource_name=f"{stack.stack_name}/providers/*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    keeping = [
        "secretsmanager:CreateSecret",
        "secretsmanager:PutSecretValue",
        "secretsmanager:DeleteSecret",
        "secretsmanager:TagResource",
    ]
    for key in (*STEPPING, "files"):  # files: an organization's own embedding key
        reading = ["secretsmanager:GetSecretValue"]
        allowed = reading + (keeping if key in ("api", "stream") else [])
        by[key].add_to_role_policy(iam.PolicyStatement(actions=allowed, resources=[own_keys]))
    if bedrock_models:  # the files function embeds a folder's chunks
        by["files"].add_to_role_policy(
            iam.PolicyStatement(
                actions=["bedrock:InvokeModel"],
                resources=[arn for model in bedrock_models for arn in bedrock_arns(model)],
            )
        )
    # A Letta import (cairn-admin, in the migrate function) puts away the keys of the
    # providers it brings over; it reads or deletes none.
    by["migrate"].add_to_role_policy(
        iam.PolicyStatement(
            actions=[
                "secretsmanager:CreateSecret",
                "secretsmanager:PutSecretValue",
                "secretsmanager:TagResource",
            ],
            resources=[own_keys],
        )
    )
    # Agents' secrets: sealed and shown by the API, opened for tool calls by the steps,
    # sealed by an import (the migrate function's cairn-admin).
    for key in (*STEPPING, "migrate"):
        sealing.grant_read(by[key])
    for key in STEPPING:
        by["sandbox"].grant_invoke(by[key])
        if bedrock_models:  # the models on Bedrock, with no key to keep
            by[key].add_to_role_policy(
                iam.PolicyStatement(
                    actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                    resources=[arn for model in bedrock_models for arn in bedrock_arns(model)],
                )
            )
        if egress is not None:  # and sign their passes
            egress.key.grant_read(by[key])
