"""The originals of uploaded files in S3: one object per file, named by organization,
folder and file (the bucket encrypts them and refuses anything but TLS; infra/)."""

from __future__ import annotations

from typing import Any


class S3Documents:
    def __init__(self, bucket: str, client: Any | None = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("s3")
        self.bucket, self._client = bucket, client

    def put(self, key: str, body: bytes, content_type: str) -> None:
        self._client.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=content_type)

    def get(self, key: str) -> bytes:
        try:
            answer = self._client.get_object(Bucket=self.bucket, Key=key)
        except self._client.exceptions.NoSuchKey:
            raise KeyError(key) from None
        return bytes(answer["Body"].read())

    def delete(self, keys: list[str]) -> None:
        for start in range(0, len(keys), 1000):  # S3's most per request
            batch = [{"Key": k} for k in keys[start : start + 1000]]
            self._client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True}
            )
