"""The originals of files uploaded to folders: a private S3 bucket (encrypted, TLS only,
versioned, its access logged), and the queue of their processing jobs."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

# A deleted or replaced original stays recoverable this long, then goes.
KEEP_OLD_VERSIONS_DAYS = 30
ACCESS_LOG_DAYS = 90


class Documents(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, removal: RemovalPolicy, dev: bool
    ) -> None:
        super().__init__(scope, construct_id)
        # A dev stack's buckets go with it (their objects first); others are kept.
        disposable: dict[str, Any] = {"auto_delete_objects": True} if dev else {}
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(ACCESS_LOG_DAYS))],
            removal_policy=removal,
            **disposable,
        )
        self.bucket = s3.Bucket(
            self,
            "Originals",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="originals/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    noncurrent_version_expiration=Duration.days(KEEP_OLD_VERSIONS_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                    expired_object_delete_marker=True,
                )
            ],
            removal_policy=removal,
            **disposable,
        )
