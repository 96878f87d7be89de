"""The Lambda functions of `functions/`, each with its own role and only its own grants."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Annotations, Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from cairn_infra.packaging import ARCHITECTURE, ROOT, RUNTIME, Layers


@dataclass(frozen=True)
class Spec:
    name: str  # the folder in functions/
    timeout: Duration
    memory_mb: int = 1024
    handler: str = "handler.handler"
    # "functions": the private subnets with a NAT route (providers, AWS APIs); "isolated":
    # no route out and a security group with no rules (the tool sandbox).
    subnets: str = "functions"
    # SnapStart where a step may call a model: the providers' SDKs import slowly.
    snap_start: bool = False
    # AWS_LAMBDA_EXEC_WRAPPER: a script run in place of the runtime's own start.
    wrapper: str | None = None


SPECS = {
    "api": Spec("api", Duration.seconds(29), snap_start=True),  # API Gateway's own limit
    # The same API behind a function URL that streams: a turn's steps run inline while the
    # stream is open, up to Lambda's limit. Its own runtime loop (the exec wrapper) streams
    # the response; SnapStart is left off, as it restores the runtime's own loop.
    "stream": Spec("stream", Duration.minutes(15), wrapper="/var/task/bootstrap"),
    "step": Spec("step", Duration.minutes(5), snap_start=True),
    "step-dead-letter": Spec("step", Duration.minutes(1), handler="handler.dead_letter_handler"),
    # Files' processing jobs (parse, chunk, embed): the step handler's code, on their own
    # queue, with Lambda's longest time and more memory for a large PDF; a job out of time
    # queues itself again.
    "files": Spec("step", Duration.minutes(15), memory_mb=2048),
    "approval": Spec("approval", Duration.seconds(30), memory_mb=512),
    "sleeptime": Spec("sleeptime", Duration.seconds(30), memory_mb=512),
    "sweeper": Spec("sweeper", Duration.minutes(2), memory_mb=512),
    "migrate": Spec("migrate", Duration.minutes(5), memory_mb=512),
    # Custom tools and stdio MCP servers' uses: no network at all (no route to the database
    # or out), no secrets, a short leash: a stdio use's 30 s (CAIRN_MCP_TIMEOUT_SECONDS) and
    # the 5 s to stop its program and answer; a tool's own limit is 10 s. It has both layers
    # like the others: its handler runs cairn's sandbox (public code; the tool's own process
    # gets an empty environment, a stdio server the layers' path to import the mcp SDK).
    "sandbox": Spec("sandbox", Duration.seconds(40), memory_mb=512, subnets="isolated"),
}


class Functions(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        layers: Layers,
        vpc: ec2.IVpc,
        security_group: ec2.ISecurityGroup,
        sandbox_security_group: ec2.ISecurityGroup,
        sandbox_name: str,
        environment: dict[str, str],
        log_retention: logs.RetentionDays,
        removal: RemovalPolicy,
        snap_start: bool = True,
        sweeper_name: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.by_name: dict[str, lambda_.Function] = {}
        # What clients invoke: the published version SnapStart restores from.
        self.entry: dict[str, lambda_.IFunction] = {}
        for key, spec in SPECS.items():
            snapped = spec.snap_start and snap_start
            log_group = logs.LogGroup(
                self, f"{key}Logs", retention=log_retention, removal_policy=removal
            )
            fn = lambda_.Function(
                self,
                key,
                runtime=RUNTIME,
                architecture=ARCHITECTURE,
                code=lambda_.Code.from_asset(
                    str(ROOT / "functions" / spec.name), exclude=["**/__pycache__"]
                ),
                handler=spec.handler,
                # The sandbox is named: steps invoke it by the name in their environment.
                # Named where others invoke them by name: steps the sandbox, EventBridge
                # Scheduler the sweeper.
                function_name={"sandbox": sandbox_name, "sweeper": sweeper_name}.get(key),
                layers=[layers.dependencies, layers.runtime],
                timeout=spec.timeout,
                memory_size=spec.memory_mb,
                environment={
                    "POWERTOOLS_SERVICE_NAME": f"cairn-{key}",
                    # Cairn uses no pydantic plugins: the first model a cold start builds
                    # (Settings, at import) skips scanning every package's entry points.
                    "PYDANTIC_DISABLE_PLUGINS": "__all__",
                    **({} if key == "sandbox" else environment),
                    **({"AWS_LAMBDA_EXEC_WRAPPER": spec.wrapper} if spec.wrapper else {}),
                },
                vpc=vpc,
                vpc_subnets=ec2.SubnetSelection(
                    subnet_type=ec2.SubnetType.PRIVATE_ISOLATED
                    if spec.subnets == "isolated"
                    else ec2.SubnetType.PRIVATE_WITH_EGRESS
                ),
                security_groups=[
                    sandbox_security_group if spec.subnets == "isolated" else security_group
                ],
                snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if snapped else None,
                tracing=lambda_.Tracing.ACTIVE,
                log_group=log_group,
            )
            self.by_name[key] = fn
            if snapped:
                Annotations.of(fn).acknowledge_warning(
                    "@aws-cdk/aws-lambda:snapStartRequirePublish",
                    "Clients invoke the 'live' alias of the published version below.",
                )
            self.entry[key] = (
                lambda_.Alias(self, f"{key}Live", alias_name="live", version=fn.current_version)
                if snapped
                else fn
            )
