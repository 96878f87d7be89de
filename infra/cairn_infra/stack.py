"""The whole of Cairn in one stack: `cdk deploy` and it serves the Letta-compatible API."""

from __future__ import annotations

import hashlib

from aws_cdk import ArnFormat, CfnOutput, CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import custom_resources as cr
from constructs import Construct

from cairn_infra.database import ADMIN_USER, APP_USER, DB_NAME, Database
from cairn_infra.egress import EgressProxy
from cairn_infra.functions import SPECS, Functions
from cairn_infra.monitoring import Alarms, Watched
from cairn_infra.network import Network
from cairn_infra.packaging import ROOT, Layers
from cairn_infra.workers import EMBED_CONCURRENCY, STEP_CONCURRENCY, WorkQueue
from cairn_infra.workflows import ApprovalWorkflow, SleeptimeWorkflow, WorkflowTimings

# Who may send to and answer the workflows: every function that publishes the outbox.
# Prefixes of Bedrock's cross-region inference profile ids (`us.anthropic.claude-...`).
INFERENCE_GEOS = frozenset({"us", "eu", "apac", "jp", "au", "ca", "us-gov", "global"})
PUBLISHERS = ("api", "stream", "step", "step-dead-letter", "approval", "sleeptime", "sweeper")


class CairnStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        dev: bool = False,
        skip_bundling: bool = False,
        timings: WorkflowTimings | None = None,
        db_max_capacity: float = 8,
        tool_network: bool = False,
        sweep_minutes: int | None = None,
        api_rate_limit: int = 100,
        stream_concurrency: int | None = None,
        bedrock_models: tuple[str, ...] = (),
        **kwargs: object,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        removal = RemovalPolicy.DESTROY if dev else RemovalPolicy.RETAIN
        retention = logs.RetentionDays.ONE_WEEK if dev else logs.RetentionDays.THREE_MONTHS
        network = Network(self, "Network", dev=dev)
        database = Database(
            self, "Database", vpc=network.vpc, clients=network.functions_sg, dev=dev,
            max_capacity=db_max_capacity,
        )  # fmt: skip
        providers = secretsmanager.Secret(
            self,
            "ProviderKeys",
            description="Model provider keys as JSON: OPENAI_API_KEY, ANTHROPIC_API_KEY, "
            "OPENAI_BASE_URL (optional). Fill in after the first deploy.",
            secret_object_value={},
            removal_policy=removal,
        )
        queue = WorkQueue(
            self, "StepQueue", queue_id="Steps", consumer_timeout=SPECS["step"].timeout,
            dead_letter_timeout=SPECS["step-dead-letter"].timeout,
            concurrency=STEP_CONCURRENCY, removal=removal,
        )  # fmt: skip
        embed_queue = WorkQueue(
            self, "EmbedQueue", queue_id="Embeddings", consumer_timeout=SPECS["step"].timeout,
            dead_letter_timeout=SPECS["step-dead-letter"].timeout,
            concurrency=EMBED_CONCURRENCY, removal=removal,
        )  # fmt: skip
        # State machine ARNs by name: the functions name them and they name the functions,
        # so neither can refer to the other's resource without a cycle.
        names = {kind: f"{self.stack_name}-{kind}" for kind in ("approval", "sleeptime")}
        arns = {
            kind: self.format_arn(service="states", resource="stateMachine", resource_name=name,
                                  arn_format=ArnFormat.COLON_RESOURCE_NAME)
            for kind, name in names.items()
        }  # fmt: skip
        environment = {
            # Through the proxy with IAM tokens, as the application role (no secret read).
            "CAIRN_DB_IAM_USER": APP_USER,
            "CAIRN_DB_HOST": database.proxy.endpoint,
            "CAIRN_DB_NAME": DB_NAME,
            "CAIRN_STEP_QUEUE_URL": queue.queue.queue_url,
            "CAIRN_EMBED_QUEUE_URL": embed_queue.queue.queue_url,
            "CAIRN_APPROVAL_STATE_MACHINE_ARN": arns["approval"],
            "CAIRN_SLEEPTIME_STATE_MACHINE_ARN": arns["sleeptime"],
            "CAIRN_PROVIDER_SECRET_ARN": providers.secret_arn,
            # Organizations' own provider keys (the providers API): a secret each, here.
            "CAIRN_PROVIDER_SECRET_PREFIX": f"{self.stack_name}/providers",
            "CAIRN_SANDBOX_FUNCTION": f"{self.stack_name}-sandbox",
            # The watchdog re-sends a stalled step only after the queue had its own chance: a
            # step whose function died comes back after the visibility timeout, then runs.
            "CAIRN_RUN_STALL_SECONDS": str(
                int(queue.visibility.to_seconds() + SPECS["step"].timeout.to_seconds() + 300)
            ),
            # One organization's runs hold at most half the step concurrency: a tenant whose
            # model hangs leaves the other half to everyone else (docs/tenancy.md).
            "CAIRN_ORG_MAX_RUNS": str(STEP_CONCURRENCY // 2),
        }
        egress = None
        if tool_network:  # tools reach their organization's allowed hosts (README)
            egress = EgressProxy(
                self, "Egress", vpc=network.vpc, sandbox_security_group=network.sandbox_sg,
                dev=dev, log_retention=retention, removal=removal,
            )  # fmt: skip
            environment["CAIRN_TOOL_EGRESS_PROXY"] = egress.address
            environment["CAIRN_TOOL_EGRESS_SECRET_ARN"] = egress.key.secret_arn
        layers = Layers(self, "Layers", skip_bundling=skip_bundling)
        fns = Functions(
            self, "Functions", layers=layers, vpc=network.vpc,
            sandbox_name=environment["CAIRN_SANDBOX_FUNCTION"],
            security_group=network.functions_sg, sandbox_security_group=network.sandbox_sg,
            environment=environment,
            log_retention=retention, removal=removal,
        )  # fmt: skip
        by = fns.by_name
        sandbox = by["sandbox"]

        for key, fn in by.items():
            if key == "sandbox":
                continue
            if key == "migrate":  # the schema's owner, and the one who sets the app's password
                fn.add_environment("CAIRN_DB_IAM_USER", ADMIN_USER)
                fn.add_environment("CAIRN_DB_APP_SECRET_ARN", database.app_secret.secret_arn)
                database.app_secret.grant_read(fn)
                database.proxy.grant_connect(fn, ADMIN_USER)
            else:
                database.proxy.grant_connect(fn, APP_USER)
            providers.grant_read(fn)
        for key in PUBLISHERS:
            queue.queue.grant_send_messages(by[key])
            embed_queue.queue.grant_send_messages(by[key])
            by[key].add_to_role_policy(
                iam.PolicyStatement(
                    # Task tokens carry no ARN: IAM scopes the answers to state machines too.
                    actions=[
                        "states:StartExecution",
                        "states:SendTaskSuccess",
                        "states:SendTaskFailure",
                    ],
                    resources=list(arns.values()),
                )
            )
        # Organizations' own provider keys: the API functions keep them (create, rotate,
        # delete, read to list models); steps read them. Only secrets under the prefix.
        own_keys = self.format_arn(service="secretsmanager", resource="secret",
                                   resource_name=f"{self.stack_name}/providers/*",
                                   arn_format=ArnFormat.COLON_RESOURCE_NAME)  # fmt: skip
        keeping = ["secretsmanager:CreateSecret", "secretsmanager:PutSecretValue",
                   "secretsmanager:DeleteSecret", "secretsmanager:TagResource"]  # fmt: skip
        for key in ("api", "stream", "step"):
            reading = ["secretsmanager:GetSecretValue"]
            allowed = reading + (keeping if key != "step" else [])
            by[key].add_to_role_policy(iam.PolicyStatement(actions=allowed, resources=[own_keys]))
        # A Letta import (cairn-admin, in the migrate function) puts away the keys of the
        # providers it brings over; it reads or deletes none.
        by["migrate"].add_to_role_policy(iam.PolicyStatement(
            actions=["secretsmanager:CreateSecret", "secretsmanager:PutSecretValue",
                     "secretsmanager:TagResource"],
            resources=[own_keys],
        ))  # fmt: skip
        for key in ("api", "stream", "step"):  # the ones that run steps, and so custom tools
            sandbox.grant_invoke(by[key])
            if bedrock_models:  # and call the models; on Bedrock, with no key to keep
                by[key].add_to_role_policy(iam.PolicyStatement(
                    actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                    resources=[arn for model in bedrock_models
                               for arn in self.bedrock_arns(model)],
                ))  # fmt: skip
            if egress is not None:  # and sign their passes
                egress.key.grant_read(by[key])

        timings = timings or WorkflowTimings()
        approval = ApprovalWorkflow(
            self, "Approval", handler=by["approval"], timings=timings, logs_retention=retention,
            state_machine_name=names["approval"],
        )  # fmt: skip
        sleeptime = SleeptimeWorkflow(
            self, "Sleeptime", handler=by["sleeptime"], timings=timings, logs_retention=retention,
            state_machine_name=names["sleeptime"],
        )  # fmt: skip
        self.state_machines = {
            "approval": approval.state_machine,
            "sleeptime": sleeptime.state_machine,
        }

        queue.connect(fns.entry["step"], by["step-dead-letter"])
        embed_queue.connect(fns.entry["step"], by["step-dead-letter"])

        # Every minute; a dev stack every half hour, since each sweep wakes the database
        # and Aurora pauses (0 ACU) only after 5 idle minutes (seconds_until_auto_pause).
        events.Rule(
            self,
            "SweeperSchedule",
            schedule=events.Schedule.rate(Duration.minutes(sweep_minutes or (30 if dev else 1))),
            targets=[targets.LambdaFunction(by["sweeper"])],
        )

        # Migrations on every deploy that changes them (the hash is of the .sql files).
        provider = cr.Provider(self, "MigrationsProvider", on_event_handler=by["migrate"])
        migrations = CustomResource(
            self,
            "Migrations",
            service_token=provider.service_token,
            properties={"migrations": _migrations_hash()},
        )
        # Not before the database can answer through the proxy: the cluster's instances and
        # the proxy's target group, not only the proxy (which its endpoint alone implies).
        migrations.node.add_dependency(database.cluster, database.proxy)
        # New code only after its schema: during a deploy the old code runs beside the new
        # schema (migrations expand, then a later release contracts: docs/deploy.md), never
        # the new code beside the old schema.
        for key, fn in by.items():
            if key not in ("migrate", "sandbox"):
                fn.node.add_dependency(migrations)

        access_logs = logs.LogGroup(
            self, "ApiAccessLogs", retention=retention, removal_policy=removal
        )
        self.http_api = apigw.HttpApi(
            self,
            "HttpApi",
            api_name=f"{self.stack_name}-api",
            description="Cairn: the Letta-compatible REST API",
            default_integration=integrations.HttpLambdaIntegration(
                "Api",
                fns.entry["api"],
                payload_format_version=apigw.PayloadFormatVersion.VERSION_2_0,
            ),
        )
        stage = self.http_api.default_stage
        assert stage is not None
        cfn_stage = stage.node.default_child
        # Per-stage throttling: a client in a loop meets 429s from API Gateway before it can
        # take the account's Lambda concurrency from the steps (context api_rate_limit).
        cfn_stage.default_route_settings = apigw.CfnStage.RouteSettingsProperty(  # type: ignore[union-attr]
            throttling_rate_limit=api_rate_limit, throttling_burst_limit=2 * api_rate_limit
        )
        cfn_stage.access_log_settings = apigw.CfnStage.AccessLogSettingsProperty(  # type: ignore[union-attr]
            destination_arn=access_logs.log_group_arn,
            format='{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",'
            '"route":"$context.routeKey","status":"$context.status",'
            '"latency":"$context.integrationLatency"}',
        )
        CfnOutput(self, "ApiUrl", value=self.http_api.api_endpoint)
        # The same API, streaming: the function checks the API key itself (as behind API
        # Gateway); Lambda's own IAM auth would need clients to sign requests, which Letta's
        # SDKs do not. Use it as the base URL where streams should stream.
        stream_url = by["stream"].add_function_url(
            auth_type=lambda_.FunctionUrlAuthType.NONE,
            invoke_mode=lambda_.InvokeMode.RESPONSE_STREAM,
        )
        CfnOutput(self, "StreamUrl", value=stream_url.url)
        if stream_concurrency is not None:
            # No API Gateway stage in front of the URL: its function's reserved concurrency
            # caps how many streams (and API key checks) run at once; more get 429.
            if stream_concurrency < 1:
                raise ValueError("stream_concurrency: a number of streams, 1 or more")
            streams = by["stream"].node.default_child
            streams.reserved_concurrent_executions = stream_concurrency  # type: ignore[union-attr]
        CfnOutput(
            self,
            "MigrateFunction",
            value=by["migrate"].function_name,
            description='Invoke with {"action": "create_tenant"} for a first API key',
        )
        CfnOutput(self, "ProviderKeysSecret", value=providers.secret_arn)
        alarms = Alarms(self, "Alarms", watched=Watched(
            functions=by, step_logs=by["step"].log_group, steps=queue.queue,
            dead_letters=queue.dead_letters, state_machines=self.state_machines,
            cluster=database.cluster, proxy=database.proxy, max_capacity=db_max_capacity,
        ))  # fmt: skip
        CfnOutput(self, "AlarmTopic", value=alarms.topic.topic_arn)
        self.bedrock_models = bedrock_models
        self.functions = fns
        self.queue = queue
        self.embed_queue = embed_queue
        self.database = database
        self.providers = providers
        self.egress = egress

    def bedrock_arns(self, model: str) -> list[str]:
        """What calling a Bedrock model id needs: its foundation model here; for a
        cross-region inference profile (`us.`, `eu.`, ... ids), the profile in this region and
        its foundation model in whichever region the profile routes the call to."""
        geo, _, base = model.partition(".")
        if geo not in INFERENCE_GEOS or not base:
            return [self.format_arn(service="bedrock", account="", resource="foundation-model",
                                    resource_name=model)]  # fmt: skip
        return [
            self.format_arn(service="bedrock", resource="inference-profile", resource_name=model),
            self.format_arn(service="bedrock", region="*", account="",
                            resource="foundation-model", resource_name=base),
        ]  # fmt: skip


def _migrations_hash() -> str:
    folder = ROOT / "layers" / "runtime" / "python" / "cairn" / "store" / "migrations"
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.sql")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()
