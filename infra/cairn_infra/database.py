"""Aurora Serverless v2 PostgreSQL (17.x: pgvector 0.8), credentials in Secrets Manager,
an RDS Proxy in front (Lambda's many short connections), migrations applied on deploy."""

from __future__ import annotations

from aws_cdk import Duration, Names, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

DB_NAME = "cairn"
ADMIN_USER, APP_USER = "cairn_admin", "cairn_app"
ENGINE = rds.DatabaseClusterEngine.aurora_postgres(version=rds.AuroraPostgresEngineVersion.VER_17_5)


class Database(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        clients: ec2.ISecurityGroup,
        dev: bool,
        min_capacity: float,
        max_capacity: float,
    ) -> None:
        super().__init__(scope, construct_id)
        self.cluster = rds.DatabaseCluster(
            self,
            "Cluster",
            engine=ENGINE,
            credentials=rds.Credentials.from_generated_secret(ADMIN_USER),
            default_database_name=DB_NAME,
            writer=rds.ClusterInstance.serverless_v2("Writer"),
            # A reader in the second AZ takes over if the writer's AZ fails.
            readers=[]
            if dev
            else [rds.ClusterInstance.serverless_v2("Reader", scale_with_writer=True)],
            serverless_v2_min_capacity=min_capacity,
            serverless_v2_max_capacity=max_capacity,
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
            storage_encrypted=True,
            iam_authentication=True,
            deletion_protection=not dev,
            removal_policy=RemovalPolicy.DESTROY if dev else RemovalPolicy.SNAPSHOT,
            backup=rds.BackupProps(retention=Duration.days(1 if dev else 14)),
            cloudwatch_logs_exports=["postgresql"],
            port=5432,
        )
        assert self.cluster.secret is not None
        self.secret = self.cluster.secret
        # Rotation every 30 days. The rotation function logs in to the cluster itself (not
        # through the proxy) to change the password, so the cluster admits its group; the
        # functions read the new secret for their next connections (SECRET_MAX_AGE_SECONDS).
        rotation = ec2.SecurityGroup(
            self, "Rotation", vpc=vpc, description="Cairn database secret rotation"
        )
        self.cluster.connections.allow_default_port_from(rotation, "secret rotation")
        self.secret.add_rotation_schedule(
            "Rotation",
            hosted_rotation=secretsmanager.HostedRotation.postgre_sql_single_user(
                vpc=vpc,
                vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
                security_groups=[rotation],
            ),
            automatically_after=Duration.days(30),
        )
        # The functions' own role (migration 0009: rows, not schema); the proxy logs in with
        # this secret, the functions with IAM tokens, and only the migrate function reads it
        # (to set the role's password).
        self.app_secret = rds.DatabaseSecret(self, "AppUser", username=APP_USER,
                                             master_secret=self.secret)  # fmt: skip
        self.proxy = self.cluster.add_proxy(
            "Proxy",
            iam_auth=True,
            # Proxy names are unique per account and region: one derived from the stack's
            # path lets a second stack (`-c stack_name=...`) sit beside the first.
            db_proxy_name=Names.unique_resource_name(self, max_length=60),
            secrets=[self.secret, self.app_secret],
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
            require_tls=True,
            # Steps run in parallel Lambdas: a short borrow timeout fails fast, SQS retries.
            borrow_timeout=Duration.seconds(30),
        )
        self.cluster.connections.allow_default_port_from(self.proxy, "RDS Proxy")
        self.proxy.connections.allow_from(clients, ec2.Port.tcp(5432), "Cairn's functions")
