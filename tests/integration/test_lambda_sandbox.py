"""The AWS sandbox path: LambdaSandbox invokes the sandbox function (moto runs our handler)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend

from cairn.adapters.aws.lambda_sandbox import LambdaSandbox
from cairn.adapters.local.lambdas import invoke
from cairn.tools.sandbox import SandboxRequest

EVENT = json.loads(
    (__import__("pathlib").Path(__file__).parents[2] / "events/sandbox/call.json").read_text()
)


@pytest.fixture
def lambda_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def run_handler(self: Any, function_name: str, qualifier: Any, body: Any, *rest: Any) -> bytes:
        # moto's simple Lambda only echoes; dispatch to the real handler instead
        assert function_name == "cairn-sandbox"
        return json.dumps(invoke("sandbox", json.loads(body))).encode()

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", run_handler)
    with mock_aws(config={"lambda": {"use_docker": False}}):
        iam = boto3.client("iam", region_name="us-east-1")
        role = iam.create_role(RoleName="sandbox", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        client = boto3.client("lambda", region_name="us-east-1")
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("handler.py", "def handler(event, context): return event")
        client.create_function(
            FunctionName="cairn-sandbox",
            Runtime="python3.12",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": archive.getvalue()},
        )
        yield client


def test_the_sample_event_runs_through_the_sandbox_handler() -> None:
    result = invoke("sandbox", EVENT)
    assert result["success"] and result["value"] == "secret:abc"


def test_lambda_sandbox_returns_values_and_errors(lambda_client: Any) -> None:
    sandbox = LambdaSandbox("cairn-sandbox", lambda_client)
    ok = sandbox.run(SandboxRequest(EVENT["source"], "secret", {"x": "q"}, "call_1"))
    assert ok.success and ok.value == "secret:q"
    bad = sandbox.run(SandboxRequest("def f():\n    raise KeyError('k')", "f", {}, "call_2"))
    assert not bad.success and bad.value.startswith("KeyError")


def test_an_unreachable_sandbox_is_a_failed_tool_not_a_crash() -> None:
    with mock_aws():
        client = boto3.client("lambda", region_name="us-east-1")
        result = LambdaSandbox("no-such-function", client).run(
            SandboxRequest("def f():\n    return 1", "f", {}, "call_3")
        )
    assert not result.success and "could not be reached" in result.value


ENV_READER = """
def read_env(name: str) -> str:
    import os
    return os.environ.get(name, "<unset>") + "|" + os.environ.get("AWS_SECRET_ACCESS_KEY", "-")
"""


def test_an_agents_secrets_reach_the_tool_through_the_sandbox_function(
    lambda_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment travels in the invocation and is the tool's alone: the function's own
    credentials stay out, and the next call, without it, sees nothing."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the-functions-own")
    sandbox = LambdaSandbox("cairn-sandbox", lambda_client)
    given = sandbox.run(
        SandboxRequest(
            ENV_READER,
            "read_env",
            {"name": "API_TOKEN"},
            "call_4",
            environment={"API_TOKEN": "tok-9"},
        )
    )
    assert given.success and given.value == "tok-9|-"
    after = sandbox.run(SandboxRequest(ENV_READER, "read_env", {"name": "API_TOKEN"}, "call_5"))
    assert after.success and after.value == "<unset>|-"
