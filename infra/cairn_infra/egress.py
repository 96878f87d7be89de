"""The tool sandbox's way out (context flag `tool_network=true`): the egress proxy of
`cairn/tools/egress.py` as a small Fargate service that the sandbox function alone may reach.

Without the flag the sandbox has no network at all, and organizations' allow-lists have no
effect. With it: the sandbox's security group gains one rule, to the proxy on 3128; the
proxy sits in the private subnets (out through the NAT gateways) and admits nothing but
the sandbox; it answers only calls whose pass the `api` and `step` functions signed with
the key in `PassKey`, for hosts of the calling organization's list, at public addresses.

The container is the public Python image running the proxy's source as its command: the
proxy is one standard-library file, so there is no image to build (no Docker on the
deploying machine, no ECR repository to keep).
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_servicediscovery as servicediscovery
from constructs import Construct

from cairn_infra.packaging import ROOT

SOURCE = ROOT / "layers" / "runtime" / "python" / "cairn" / "tools" / "egress.py"
# The official image, from ECR Public (no Docker Hub rate limits through the NAT gateways).
IMAGE = "public.ecr.aws/docker/library/python:3.12-slim"
PORT = 3128
HEALTH_CHECK = [
    "CMD",
    "python",
    "-c",
    f"import socket; socket.create_connection(('127.0.0.1', {PORT}), 2)",
]


class EgressProxy(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        sandbox_security_group: ec2.SecurityGroup,
        dev: bool,
        log_retention: logs.RetentionDays,
        removal: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        self.key = secretsmanager.Secret(
            self,
            "PassKey",
            description="Signs the passes that let a tool call through the egress proxy",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True
            ),
            removal_policy=removal,
        )
        self.security_group = ec2.SecurityGroup(
            self,
            "Proxy",
            vpc=vpc,
            description="Cairn egress proxy: in from the tool sandbox only, out to the internet",
            allow_all_outbound=True,  # to any port an allow-list may name; addresses are checked
        )
        self.security_group.add_ingress_rule(
            sandbox_security_group, ec2.Port.tcp(PORT), "tool calls through the proxy"
        )
        # Inline, not `add_egress_rule`: CDK writes a rule to another group as a separate
        # AWS::EC2::SecurityGroupEgress resource and drops its "disallow all" placeholder,
        # and a group whose SecurityGroupEgress property is empty gets EC2's default rule
        # allowing all outbound traffic ("We do not add these rules if you specify your own
        # egress rules", AWS::EC2::SecurityGroup, CloudFormation User Guide).
        sandbox = sandbox_security_group.node.default_child
        sandbox.add_property_override(  # type: ignore[union-attr]
            "SecurityGroupEgress",
            [
                {
                    "IpProtocol": "tcp",
                    "FromPort": PORT,
                    "ToPort": PORT,
                    "DestinationSecurityGroupId": self.security_group.security_group_id,
                    "Description": "the egress proxy, and nothing else",
                }
            ],
        )
        namespace = servicediscovery.PrivateDnsNamespace(
            self,
            "Namespace",
            vpc=vpc,
            name="cairn.internal",
            description="Cairn's internal names (the egress proxy)",
        )
        cluster = ecs.Cluster(
            self, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED
        )
        task = ecs.FargateTaskDefinition(
            self,
            "Task",
            cpu=256,
            memory_limit_mib=512,
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=ecs.CpuArchitecture.ARM64,
                operating_system_family=ecs.OperatingSystemFamily.LINUX,
            ),
        )
        task.add_container(
            "proxy",
            image=ecs.ContainerImage.from_registry(IMAGE),
            command=["python", "-I", "-c", SOURCE.read_text()],
            port_mappings=[ecs.PortMapping(container_port=PORT)],
            secrets={"CAIRN_EGRESS_KEY": ecs.Secret.from_secrets_manager(self.key)},
            logging=ecs.LogDrivers.aws_logs(
                stream_prefix="egress",
                log_group=logs.LogGroup(
                    self, "Logs", retention=log_retention, removal_policy=removal
                ),
            ),
            health_check=ecs.HealthCheck(command=HEALTH_CHECK, interval=Duration.seconds(30)),
            readonly_root_filesystem=True,
            user="nobody",
        )
        self.service = ecs.FargateService(
            self,
            "Service",
            cluster=cluster,
            task_definition=task,
            # One per AZ, so a zone's outage leaves tools their way out (dev: one).
            desired_count=1 if dev else 2,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            security_groups=[self.security_group],
            assign_public_ip=False,
            circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
            cloud_map_options=ecs.CloudMapOptions(
                name="egress", cloud_map_namespace=namespace, dns_ttl=Duration.seconds(10)
            ),
        )
        # What the sandbox function's callers put in a tool's proxy URL.
        self.address = f"egress.cairn.internal:{PORT}"
