"""Two AZs: public subnets for the NAT gateways, private subnets with egress for the
functions (they call the model providers), isolated subnets for the database."""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from constructs import Construct


class Network(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, dev: bool) -> None:
        super().__init__(scope, construct_id)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            # One NAT gateway in dev saves its hourly cost; production keeps one per AZ.
            nat_gateways=1 if dev else 2,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC),
                ec2.SubnetConfiguration(
                    name="functions", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
                ),
                ec2.SubnetConfiguration(
                    name="database", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED
                ),
            ],
        )
        self.vpc.add_flow_log("FlowLogs")
        self.functions_sg = ec2.SecurityGroup(
            self, "Functions", vpc=self.vpc, description="Cairn Lambda functions"
        )
        # Custom tools: no rule out at all (CDK adds a rule matching no traffic), in the
        # subnets with no route out; the database admits only functions_sg.
        self.sandbox_sg = ec2.SecurityGroup(
            self,
            "Sandbox",
            vpc=self.vpc,
            description="Cairn tool sandbox: no traffic in or out",
            allow_all_outbound=False,
        )
