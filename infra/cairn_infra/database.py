"""Aurora Serverless v2 PostgreSQL (17.x: pgvector 0.8), credentials in Secrets Manager,
an RDS Proxy in front (Lambda's many short connections), migrations applied on deploy.

With `size=small` there is no proxy: a cluster behind one never pauses, and the proxy alone
costs more than the rest of a small stack. The functions connect to the cluster itself with
IAM tokens over TLS checked against the RDS CA bundle (packaging.py ships it), the cluster
pauses at 0 ACU after five idle minutes, and the functions' sessions end after a minute idle
(`IDLE_SESSION_SECONDS`) so that a warm function's connection does not keep it awake.
"""

from __future__ import annotations

from aws_cdk import Duration, Names, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

DB_NAME = "cairn"
ADMIN_USER, APP_USER = "cairn_admin", "cairn_app"
# Which Aurora PostgreSQL versions RDS Proxy takes, by region: "Supported Regions and Aurora
# DB engines for Amazon RDS Proxy", Amazon Aurora User Guide, https://docs.aws.amazon.com/
# AmazonRDS/latest/AuroraUserGuide/Concepts.Aurora_Fea_Regions_DB-eng.Feature.RDS_Proxy.html
# (its PostgreSQL table could not be read from here: unverified for 17.5; a proxy refusing
# the engine fails the first deploy at its target group, before any data, and `size=small`
# has no proxy). 0 ACU auto-pause needs 16.3 or later ("Aurora Serverless v2 capacity").
ENGINE = rds.DatabaseClusterEngine.aurora_postgres(version=rds.AuroraPostgresEngineVersion.VER_17_5)
# Aurora pauses an instance after this long with no connections (the least it takes).
AUTO_PAUSE = Duration.minutes(5)
# A small stack's functions' sessions end after this long idle (idle_session_timeout).
IDLE_SESSION_SECONDS = 60


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
        proxy: bool = True,
        reader: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        self.cluster = rds.DatabaseCluster(
            self,
            "Cluster",
            engine=ENGINE,
            credentials=rds.Credentials.from_generated_secret(ADMIN_USER),
            default_database_name=DB_NAME,
            writer=rds.ClusterInstance.serverless_v2("Writer"),
            # A reader in the second AZ takes over if the writer's AZ fails (not in dev or
            # small, which take the hour a new writer needs instead). Cairn reads nothing
            # from it, so it scales on its own (promotion tier 2) and idles at the floor:
            # scaling with the writer would bill it at the writer's capacity all the time,
            # e.g. a writer averaging 4 ACU costs 3.5 ACU x $0.12 x 730 h = $307 a month
            # more. The price: after a failover the new writer starts at 0.5 ACU and scales
            # up in seconds (Aurora Serverless v2 doubles as it needs), so the first
            # requests after a failover are slower; the failover itself (~30 s) and the
            # steps' retries dominate that.
            readers=[rds.ClusterInstance.serverless_v2("Reader", scale_with_writer=False)]
            if reader
            else [],
            serverless_v2_min_capacity=min_capacity,
            serverless_v2_max_capacity=max_capacity,
            serverless_v2_auto_pause_duration=AUTO_PAUSE if min_capacity == 0 else None,
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
        self.clients = clients
        self.proxy: rds.DatabaseProxy | None = None
        self.app_secret: rds.DatabaseSecret | None = None
        if not proxy:
            # The functions log in to the cluster itself, with IAM tokens as the app role.
            self.cluster.connections.allow_default_port_from(clients, "Cairn's functions")
            return
        # The functions' own role (migration 0009: rows, not schema); the proxy logs in with
        # this secret, the functions with IAM tokens, and only the migrate function reads it
        # (to set the role's password).
        self.app_secret = rds.DatabaseSecret(
            self, "AppUser", username=APP_USER, master_secret=self.secret
        )
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

    @property
    def endpoint(self) -> str:
        """Where the functions connect: the proxy, or the cluster's writer endpoint."""
        if self.proxy is not None:
            return self.proxy.endpoint
        return self.cluster.cluster_endpoint.hostname

    def grant_connect(self, grantee: iam.IGrantable, user: str) -> None:
        """`rds-db:connect` as `user`, on whichever the functions connect to."""
        if self.proxy is not None:
            self.proxy.grant_connect(grantee, user)
        else:
            self.cluster.grant_connect(grantee, user)
