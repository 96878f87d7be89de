"""Two AZs: public subnets for the way out, private subnets with egress for the functions
(they call the model providers), isolated subnets for the database.

The way out is NAT gateways (one per AZ; one with `dev`), or with `size=small` one NAT
instance: a t4g.nano running Amazon Linux 2023 with the NAT rules CDK's own
`NatProvider.instanceV2` writes (about $3 a month against a gateway's $33). It is one
instance in one AZ: while it is down the functions reach neither the model providers nor
AWS's public endpoints (SQS, Secrets Manager, Step Functions) until EC2 recovers it; the
database, inside the VPC, is unaffected (docs/deploy.md).
"""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

NAT_INSTANCE_TYPE = "t4g.nano"
# CDK's default range, written out: the NAT instance admits it by value, which checks can read.
CIDR = "10.0.0.0/16"


class Network(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, dev: bool, small: bool) -> None:
        super().__init__(scope, construct_id)
        self.nat_instance: ec2.NatInstanceProviderV2 | None = None
        if small:
            self.nat_instance = ec2.NatProvider.instance_v2(
                instance_type=ec2.InstanceType(NAT_INSTANCE_TYPE),
                # Only what the private subnets send is let in (below); all may go out.
                default_allowed_traffic=ec2.NatTrafficDirection.OUTBOUND_ONLY,
            )
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            ip_addresses=ec2.IpAddresses.cidr(CIDR),
            nat_gateway_provider=self.nat_instance,
            # One NAT in dev or small saves its hourly cost; production keeps one per AZ.
            nat_gateways=1 if dev or small else 2,
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
        if self.nat_instance is not None:
            self.nat_instance.security_group.add_ingress_rule(
                ec2.Peer.ipv4(CIDR), ec2.Port.all_traffic(), "what the VPC's subnets send out"
            )
            for subnet in self.vpc.public_subnets:
                instance = subnet.node.try_find_child("NatInstance")
                if isinstance(instance, ec2.Instance):
                    # Its root volume encrypted like every other volume of the stack (the
                    # construct takes no block devices: set on the resource).
                    cfn = instance.node.default_child
                    assert isinstance(cfn, ec2.CfnInstance)
                    cfn.block_device_mappings = [
                        ec2.CfnInstance.BlockDeviceMappingProperty(
                            device_name="/dev/xvda",  # Amazon Linux 2023's root
                            ebs=ec2.CfnInstance.EbsProperty(
                                encrypted=True, volume_type="gp3", volume_size=8
                            ),
                        )
                    ]
        # S3 through a gateway endpoint (free): files' originals no longer pay NAT processing
        # nor squeeze through the small shape's t4g.nano. Only the functions' subnets route
        # to it: the isolated ones, where the tool sandbox runs, keep no way out at all.
        self.vpc.add_gateway_endpoint(
            "S3",
            service=ec2.GatewayVpcEndpointAwsService.S3,
            subnets=[ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)],
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
