"""The whole of Cairn in one stack: `cdk deploy` and it serves the Letta-compatible API."""

from __future__ import annotations

from aws_cdk import (
    ArnFormat,
    Aws,
    CfnOutput,
    CfnRule,
    CfnRuleAssertion,
    Duration,
    Fn,
    RemovalPolicy,
    Stack,
)
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from cairn_infra.access import grant_access
from cairn_infra.api import Api
from cairn_infra.database import APP_USER, DB_NAME, IDLE_SESSION_SECONDS, Database
from cairn_infra.documents import Documents
from cairn_infra.egress import EgressProxy
from cairn_infra.functions import SPECS, Functions
from cairn_infra.migrations import migrate_on_deploy
from cairn_infra.monitoring import Alarms, Watched
from cairn_infra.network import Network
from cairn_infra.packaging import RDS_CA_BUNDLE, Layers, rds_ca_regions
from cairn_infra.shape import Shape
from cairn_infra.workers import WorkQueue
from cairn_infra.workflows import ApprovalWorkflow, SleeptimeWorkflow, WorkflowTimings

# Prefixes of Bedrock's cross-region inference profile ids (`us.anthropic.claude-...`).
INFERENCE_GEOS = frozenset({"us", "eu", "apac", "jp", "au", "ca", "us-gov", "global"})


class CairnStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        shape: Shape | None = None,
        skip_bundling: bool = False,
        timings: WorkflowTimings | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        shape = shape or Shape()
        dev = shape.dev
        removal = RemovalPolicy.DESTROY if dev else RemovalPolicy.RETAIN
        retention = logs.RetentionDays.ONE_WEEK if dev else logs.RetentionDays.THREE_MONTHS
        network = Network(self, "Network", dev=dev, small=shape.small)
        database = Database(
            self,
            "Database",
            vpc=network.vpc,
            clients=network.functions_sg,
            dev=dev,
            min_capacity=shape.min_acu,
            max_capacity=shape.db_max_acu,
            proxy=not shape.small,
            reader=not (dev or shape.small),
        )
        providers = secretsmanager.Secret(
            self,
            "ProviderKeys",
            description="Model provider keys as JSON: OPENAI_API_KEY, ANTHROPIC_API_KEY, "
            "OPENAI_BASE_URL (optional). Fill in after the first deploy.",
            secret_object_value={},
            removal_policy=removal,
        )
        # What agents' secrets (their tools' environment) are sealed with in the database:
        # the functions use its SHA-256 as an AES-GCM key. Never rotated: the sealed values
        # would no longer open (docs/tools.md, "Secrets").
        sealing = secretsmanager.Secret(
            self,
            "SealingKey",
            description="Seals agents' secrets in the database; do not change or rotate",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True
            ),
            removal_policy=removal,
        )
        queue = WorkQueue(
            self,
            "StepQueue",
            queue_id="Steps",
            consumer_timeout=SPECS["step"].timeout,
            dead_letter_timeout=SPECS["step-dead-letter"].timeout,
            concurrency=shape.step_concurrency,
            removal=removal,
            high_throughput=shape.fifo_high_throughput,
        )
        embed_queue = WorkQueue(
            self,
            "EmbedQueue",
            queue_id="Embeddings",
            consumer_timeout=SPECS["step"].timeout,
            dead_letter_timeout=SPECS["step-dead-letter"].timeout,
            concurrency=shape.embed_concurrency,
            removal=removal,
            high_throughput=shape.fifo_high_throughput,
        )
        documents = Documents(self, "Documents", removal=removal, dev=dev)
        files_queue = WorkQueue(
            self,
            "FilesQueue",
            queue_id="Files",
            consumer_timeout=SPECS["files"].timeout,
            dead_letter_timeout=SPECS["step-dead-letter"].timeout,
            concurrency=shape.files_concurrency,
            removal=removal,
            high_throughput=shape.fifo_high_throughput,
        )
        # State machine ARNs by name: the functions name them and they name the functions,
        # so neither can refer to the other's resource without a cycle.
        names = {kind: f"{self.stack_name}-{kind}" for kind in ("approval", "sleeptime")}
        arns = {
            kind: self.format_arn(
                service="states",
                resource="stateMachine",
                resource_name=name,
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for kind, name in names.items()
        }
        environment = {
            # Through the proxy (or to the cluster) with IAM tokens, as the application role
            # (no secret read).
            "CAIRN_DB_IAM_USER": APP_USER,
            "CAIRN_DB_HOST": database.endpoint,
            "CAIRN_DB_NAME": DB_NAME,
            "CAIRN_STEP_QUEUE_URL": queue.queue.queue_url,
            "CAIRN_EMBED_QUEUE_URL": embed_queue.queue.queue_url,
            "CAIRN_FILES_QUEUE_URL": files_queue.queue.queue_url,
            "CAIRN_DOCUMENTS_BUCKET": documents.bucket.bucket_name,
            "CAIRN_APPROVAL_STATE_MACHINE_ARN": arns["approval"],
            "CAIRN_SLEEPTIME_STATE_MACHINE_ARN": arns["sleeptime"],
            "CAIRN_PROVIDER_SECRET_ARN": providers.secret_arn,
            "CAIRN_SEALING_KEY_SECRET_ARN": sealing.secret_arn,
            # Organizations' own provider keys (the providers API): a secret each, here.
            "CAIRN_PROVIDER_SECRET_PREFIX": f"{self.stack_name}/providers",
            "CAIRN_SANDBOX_FUNCTION": f"{self.stack_name}-sandbox",
            # The watchdog re-sends a stalled step only after the queue had its own chance: a
            # step whose function died comes back after the visibility timeout, then runs.
            "CAIRN_RUN_STALL_SECONDS": str(
                int(queue.visibility.to_seconds() + SPECS["step"].timeout.to_seconds() + 300)
            ),
            # One organization's runs hold at most half the step concurrency: a tenant whose
            # model hangs leaves the other half to everyone else; and a fifth of it is kept
            # for organizations with nothing running, so hangs of several tenants, each
            # under its share, do not fill it either (docs/tenancy.md).
            # A single-tenant stack (`single_tenant`) has no share: its one organization may
            # use the whole concurrency.
            "CAIRN_ORG_MAX_RUNS": "0" if shape.single_tenant else str(shape.step_concurrency // 2),
            "CAIRN_STEP_CONCURRENCY": str(shape.step_concurrency),
            "CAIRN_ORG_RESERVE": str(max(1, shape.step_concurrency // 5)),
            # Steps' metrics, per organization too, as log lines CloudWatch reads (EMF).
            "CAIRN_METRICS": "emf",
        }
        if shape.small:
            # The functions check the cluster against the vendored RDS roots: a region the
            # bundle has none for fails its deploy here, saying why, instead of at the
            # migrations' certificate check (refresh it: `make rds-ca`).
            regions = sorted(rds_ca_regions())
            CfnRule(
                self,
                "RdsCaCoversRegion",
                assertions=[
                    CfnRuleAssertion(
                        assert_=Fn.condition_contains(regions, Aws.REGION),
                        assert_description=(
                            "size=small checks the database's certificate against "
                            "infra/cairn_infra/rds-ca-bundle.pem, which holds no root for this "
                            "region: run `make rds-ca` (it fetches AWS's global bundle) and "
                            "deploy again, or deploy the production shape"
                        ),
                    )
                ],
            )
            environment |= {
                # The cluster's certificate chains to the RDS CA, not a public one.
                "CAIRN_DB_SSLROOTCERT": RDS_CA_BUNDLE,
                # No proxy to multiplex: each function's session may keep its plans.
                "CAIRN_DB_PREPARED_STATEMENTS": "true",
                # A warm function's idle session would keep the cluster from pausing.
                "CAIRN_DB_IDLE_SESSION_SECONDS": str(IDLE_SESSION_SECONDS),
            }
        # Scheduled messages fire on time through EventBridge Scheduler, which invokes the
        # sweeper (by name: the functions' environment names it) with this role.
        schedule_group = scheduler.CfnScheduleGroup(
            self, "ScheduleGroup", name=f"{self.stack_name}-messages"
        )
        sweeper_arn = self.format_arn(
            service="lambda",
            resource="function",
            resource_name=f"{self.stack_name}-sweeper",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        schedule_role = iam.Role(
            self,
            "ScheduleRole",
            assumed_by=iam.ServicePrincipal("scheduler.amazonaws.com"),
            description="EventBridge Scheduler invokes the sweeper for scheduled messages",
        )
        schedule_role.add_to_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[sweeper_arn])
        )
        environment |= {
            "CAIRN_SCHEDULER_GROUP": schedule_group.ref,
            "CAIRN_SCHEDULER_TARGET_ARN": sweeper_arn,
            "CAIRN_SCHEDULER_ROLE_ARN": schedule_role.role_arn,
        }
        if shape.cors_origins:
            environment["CAIRN_CORS_ORIGINS"] = ",".join(shape.cors_origins)
        if shape.otel_endpoint:  # traces over OTLP, one per run (docs/operations.md)
            environment |= {
                "OTEL_EXPORTER_OTLP_ENDPOINT": shape.otel_endpoint,
                "OTEL_SERVICE_NAME": self.stack_name,
            }
        egress = None
        if shape.tool_network:  # tools reach their organization's allowed hosts (docs/tools.md)
            egress = EgressProxy(
                self,
                "Egress",
                vpc=network.vpc,
                sandbox_security_group=network.sandbox_sg,
                dev=dev,
                log_retention=retention,
                removal=removal,
            )
            environment["CAIRN_TOOL_EGRESS_PROXY"] = egress.address
            environment["CAIRN_TOOL_EGRESS_SECRET_ARN"] = egress.key.secret_arn
        layers = Layers(self, "Layers", skip_bundling=skip_bundling)
        fns = Functions(
            self,
            "Functions",
            layers=layers,
            vpc=network.vpc,
            sandbox_name=environment["CAIRN_SANDBOX_FUNCTION"],
            security_group=network.functions_sg,
            sandbox_security_group=network.sandbox_sg,
            environment=environment,
            log_retention=retention,
            removal=removal,
            # SnapStart's cache is billed while a version exists (about $8 a month for two
            # functions): a small stack takes the slower cold start instead.
            snap_start=not shape.small,
            sweeper_name=f"{self.stack_name}-sweeper",
        )
        by = fns.by_name
        grant_access(
            self,
            by,
            database=database,
            providers=providers,
            sealing=sealing,
            queues=(queue, embed_queue, files_queue),
            documents=documents.bucket,
            workflows=list(arns.values()),
            bedrock_arns=self.bedrock_arns,
            bedrock_models=shape.bedrock_models,
            egress=egress,
            schedules=(schedule_group.ref, schedule_role),
        )

        timings = timings or WorkflowTimings(
            approval_timeout=round(shape.approval_timeout_hours * 3600)
        )
        approval = ApprovalWorkflow(
            self,
            "Approval",
            handler=by["approval"],
            timings=timings,
            logs_retention=retention,
            state_machine_name=names["approval"],
        )
        sleeptime = SleeptimeWorkflow(
            self,
            "Sleeptime",
            handler=by["sleeptime"],
            timings=timings,
            logs_retention=retention,
            state_machine_name=names["sleeptime"],
        )
        self.state_machines = {
            "approval": approval.state_machine,
            "sleeptime": sleeptime.state_machine,
        }

        queue.connect(fns.entry["step"], by["step-dead-letter"])
        embed_queue.connect(fns.entry["step"], by["step-dead-letter"])
        files_queue.connect(by["files"], by["step-dead-letter"])

        if shape.small:
            # A round wakes the paused database for six minutes: the sweeper skips it when
            # no function ran for a stalled run's wait and two rounds (nothing can be left).
            active = [by[k] for k in ("api", "stream", "step", "files", "approval", "sleeptime")]
            by["sweeper"].add_environment(
                "CAIRN_SWEEP_ACTIVITY_FUNCTIONS", ",".join(f.function_name for f in active)
            )
            stall = int(environment["CAIRN_RUN_STALL_SECONDS"])
            by["sweeper"].add_environment(
                "CAIRN_SWEEP_ACTIVITY_SECONDS", str(stall + 2 * 60 * shape.sweep_every)
            )
            by["sweeper"].add_to_role_policy(
                iam.PolicyStatement(actions=["cloudwatch:GetMetricData"], resources=["*"])
            )
        # Every minute; rarer where the database pauses (Shape.sweep_every).
        events.Rule(
            self,
            "SweeperSchedule",
            schedule=events.Schedule.rate(Duration.minutes(shape.sweep_every)),
            targets=[targets.LambdaFunction(by["sweeper"])],
        )
        migrate_on_deploy(self, by, database)

        api = Api(
            self,
            "HttpApi",
            api_name=f"{self.stack_name}-api",
            handler=fns.entry["api"],
            api=by["api"],
            stream=by["stream"],
            rate_limit=shape.api_rate_limit,
            api_concurrency=shape.api_concurrency,
            stream_concurrency=shape.stream_concurrency,
            retention=retention,
            removal=removal,
        )
        self.http_api = api.http_api
        CfnOutput(self, "ApiUrl", value=api.url)
        CfnOutput(self, "StreamUrl", value=api.stream_url)
        CfnOutput(
            self,
            "MigrateFunction",
            value=by["migrate"].function_name,
            description='Invoke with {"action": "create_tenant"} for a first API key',
        )
        CfnOutput(self, "ProviderKeysSecret", value=providers.secret_arn)
        alarms = Alarms(
            self,
            "Alarms",
            watched=Watched(
                functions=by,
                step_logs=by["step"].log_group,
                steps=queue.queue,
                dead_letters=queue.dead_letters,
                state_machines=self.state_machines,
                cluster=database.cluster,
                proxy=database.proxy,
                max_capacity=shape.db_max_acu,
                compact=shape.small,
                dashboard=shape.wants_dashboard,
            ),
        )
        CfnOutput(self, "AlarmTopic", value=alarms.topic.topic_arn)
        self.shape = shape
        self.bedrock_models = shape.bedrock_models
        self.functions = fns
        self.queue = queue
        self.embed_queue = embed_queue
        self.files_queue = files_queue
        self.documents = documents
        self.database = database
        self.providers = providers
        self.egress = egress

    def bedrock_arns(self, model: str) -> list[str]:
        """What calling a Bedrock model id needs: its foundation model here; for a
        cross-region inference profile (`us.`, `eu.`, ... ids), the profile in this region and
        its foundation model in whichever region the profile routes the call to."""
        geo, _, base = model.partition(".")
        if geo not in INFERENCE_GEOS or not base:
            return [
                self.format_arn(
                    service="bedrock", account="", resource="foundation-model", resource_name=model
                )
            ]
        return [
            self.format_arn(service="bedrock", resource="inference-profile", resource_name=model),
            self.format_arn(
                service="bedrock",
                region="*",
                account="",
                resource="foundation-model",
                resource_name=base,
            ),
        ]
