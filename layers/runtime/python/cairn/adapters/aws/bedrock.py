"""Amazon Bedrock's runtime client (boto3's `bedrock-runtime`), for the model and embedding
calls of `cairn.llm` and `cairn.embeddings`: made here, where the AWS adapters live, and
installed into `cairn.llm.clients` by the runtime."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from cairn.llm import clients
from cairn.llm.clients import BedrockOwnKey
from cairn.llm.types import LLMError


@lru_cache(maxsize=64)  # whole-second deadlines: a few dozen clients at most
def runtime_client(
    endpoint: str | None, timeout: float, retries: int, own: BedrockOwnKey = None
) -> Any:
    """In the function's region, signed by its IAM role; an `endpoint` names another (a VPC
    endpoint, a test server); `own` (an organization's provider) signs with its access key,
    in its region. One per endpoint, timeout and key: each pools its connections."""
    from botocore.config import Config

    retry = {"total_max_attempts": retries + 1, "mode": "standard"}  # the first call included
    config = Config(read_timeout=timeout, connect_timeout=min(timeout, 10), retries=retry)
    return _client("bedrock-runtime", endpoint, own, config)


def inference_profiles(endpoint: str | None, own: BedrockOwnKey) -> list[str]:
    """The inference profiles the key may use, by ARN, as Letta lists a Bedrock provider's
    models (ListInferenceProfiles, the control plane); raises LLMError `auth` if the key is
    refused."""
    from botocore.config import Config

    from cairn.llm.bedrock_converse import bedrock_errors

    config = Config(read_timeout=5, connect_timeout=5, retries={"total_max_attempts": 1})
    with bedrock_errors():  # a refused key: `auth`, as a Converse call's
        client = _client("bedrock", endpoint, own, config)
        pages = client.get_paginator("list_inference_profiles").paginate()
        return [
            p["inferenceProfileArn"]
            for page in pages
            for p in page.get("inferenceProfileSummaries", ())
        ]


def _client(service: str, endpoint: str | None, own: BedrockOwnKey, config: Any) -> Any:
    import boto3
    from botocore.exceptions import BotoCoreError

    keys: dict[str, Any] = {}
    if own is not None:
        keys = {"aws_access_key_id": own[0], "aws_secret_access_key": own[1], "region_name": own[2]}
    try:
        return boto3.client(service, endpoint_url=endpoint, config=config, **keys)
    except (BotoCoreError, ValueError) as err:  # no region, or an endpoint botocore refuses
        raise LLMError("bad_request", f"Bedrock: {err}") from err


def install() -> None:
    clients.use_bedrock(runtime_client, inference_profiles)
