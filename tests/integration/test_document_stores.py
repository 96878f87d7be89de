"""The stores of files' originals: S3 (against moto's S3) and the local directory, held to
one contract: what is put is got back whole, a missing key is KeyError, deleting is
idempotent, and keys cannot leave the store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cairn.adapters.aws.documents import S3Documents
from cairn.adapters.local.directory_documents import DirectoryDocuments


@pytest.fixture(params=["s3", "directory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "directory":
        yield DirectoryDocuments(tmp_path / "documents")
        return
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="originals")
        yield S3Documents("originals", client)


def test_put_get_and_delete(store: Any) -> None:
    body = bytes(range(256)) * 4000  # binary, ~1 MB
    store.put("org-1/source-1/file-1", body, "application/pdf")
    assert store.get("org-1/source-1/file-1") == body
    store.put("org-1/source-1/file-1", b"replaced", "text/plain")
    assert store.get("org-1/source-1/file-1") == b"replaced"
    store.put("org-1/source-1/file-2", b"two", "text/plain")
    store.delete(["org-1/source-1/file-1", "org-1/source-1/file-2", "org-1/never/there"])
    for key in ("org-1/source-1/file-1", "org-1/source-1/file-2"):
        with pytest.raises(KeyError):
            store.get(key)
    store.delete(["org-1/source-1/file-1"])  # again: no error


def test_many_keys_are_deleted_past_s3_s_batch_of_1000(store: Any) -> None:
    keys = [f"org-1/source-1/file-{n}" for n in range(1005)]
    for key in keys:
        store.put(key, b"x", "text/plain")
    store.delete(keys)
    with pytest.raises(KeyError):
        store.get(keys[-1])


def test_a_key_cannot_leave_the_directory(tmp_path: Path) -> None:
    store = DirectoryDocuments(tmp_path / "documents")
    with pytest.raises(ValueError, match="outside the store"):
        store.put("../escaped", b"x", "text/plain")
    assert not (tmp_path / "escaped").exists()
