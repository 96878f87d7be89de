"""Amazon Bedrock's runtime client (boto3's `bedrock-runtime`), for the model and embedding
calls of `cairn.llm` and `cairn.embeddings`: made here, where the AWS adapters live, and
installed into `cairn.llm.clients` by the runtime."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from cairn.llm import clients
from cairn.llm.types import LLMError


@lru_cache(maxsize=64)  # whole-second deadlines: a few dozen clients at most
def runtime_client(endpoint: str | None, timeout: float, retries: int) -> Any:
    """In the function's region, signed by its IAM role; an `endpoint` names another (a VPC
    endpoint, a test server). One per endpoint and timeout: each pools its connections."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError

    retry = {"total_max_attempts": retries + 1, "mode": "standard"}  # the first call included
    try:
        return boto3.client(
            "bedrock-runtime", endpoint_url=endpoint,
            config=Config(read_timeout=timeout, connect_timeout=min(timeout, 10), retries=retry),
        )  # fmt: skip
    except BotoCoreError as err:  # no region configured
        raise LLMError("bad_request", f"Bedrock: {err}") from err


def install() -> None:
    clients.use_bedrock(runtime_client)
