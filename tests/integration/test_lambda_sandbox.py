"""The AWS sandbox path: LambdaSandbox invokes the sandbox function (moto runs our handler)."""

from __future__ import annotations

import io
import json
import re
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend

from cairn.adapters.aws.lambda_sandbox import LambdaSandbox
from cairn.adapters.local.lambdas import LocalContext, invoke, load_handler
from cairn.assembly.edges import SETTINGS
from cairn.mcp_servers.calls import reached
from cairn.mcp_servers.client import McpError, McpResult, McpTarget, call_tool, list_tools
from cairn.mcp_servers.models import McpServer
from cairn.sealing import Sealer
from cairn.store.db import Database
from cairn.tools.sandbox import Network, SandboxRequest, ServerLaunch

EVENT = json.loads((Path(__file__).parents[2] / "events/sandbox/call.json").read_text())


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


FAKES = Path(__file__).resolve().parents[1] / "fakes"
SERVER = str(FAKES / "stdio_mcp_server.py")


def served(
    sandbox: LambdaSandbox, work: Any, *args: str, timeout: float = 20, name: str = "local"
) -> Any:
    """One use of the fake stdio server (the `mcp` SDK's own) through the sandbox function."""
    launch = ServerLaunch(
        argv=(sys.executable, SERVER, *args),
        environment={"API_KEY": "stdio-secret"},
        network=Network("org-test"),
        timeout_seconds=timeout,
    )
    with sandbox.confined(launch) as confined:
        return work(McpTarget(name, "stdio", process=confined), timeout)


def test_on_aws_a_stdio_server_runs_whole_in_the_sandbox_function(
    lambda_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 67 on AWS: the API's and the step's functions hold the credentials, so the use
    (start, initialize, list or call, stop) is made in the sandbox function, the program a
    child with its own environment and none of the function's."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the-functions-own")
    invoked: list[dict[str, Any]] = []
    real = LambdaSimpleBackend.invoke

    def noted(self: Any, function_name: str, qualifier: Any, body: Any, *rest: Any) -> Any:
        invoked.append(json.loads(body))
        return real(self, function_name, qualifier, body, *rest)

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", noted)
    sandbox = LambdaSandbox("cairn-sandbox", lambda_client)
    listed = served(sandbox, lambda target, timeout: list_tools(target, (), timeout))
    assert {"add", "env", "probe", "die"} <= {t.name for t in listed}
    assert next(t for t in listed if t.name == "add").input_schema["required"] == ["a", "b"]
    add = served(sandbox, lambda t, s: call_tool(t, "add", {"a": 2, "b": 3}, (), s))
    assert add == McpResult("5", False)
    for name, value in (("API_KEY", "stdio-secret"), ("AWS_SECRET_ACCESS_KEY", "<unset>")):
        seen = served(sandbox, lambda t, s, n=name: call_tool(t, "env", {"name": n}, (), s))
        assert seen.text == value
    # One invocation a use; the server's env travels in the payload, never anywhere else.
    assert [i["serve"]["use"] for i in invoked] == ["list_tools", *["call_tool"] * 3]
    assert invoked[0]["serve"]["environment"] == {"API_KEY": "stdio-secret"}


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("hang", "did not answer within 3 s"),
        ("exit", "failed"),
        ("endless-line", "stopped: a line of over 16777216 bytes on stdout"),
    ],
)
def test_on_aws_a_server_that_misbehaves_fails_its_use_naming_itself(
    lambda_client: Any, mode: str, said: str
) -> None:
    sandbox = LambdaSandbox("cairn-sandbox", lambda_client)
    started = time.monotonic()
    with pytest.raises(McpError) as failed:
        served(sandbox, lambda t, s: list_tools(t, (), s), mode, timeout=3)
    assert "the stdio MCP server `local`" in str(failed.value) and said in str(failed.value)
    assert time.monotonic() - started < 3 + 2 + 3  # its bound, and the SDK's grace to stop it


def test_on_aws_an_unreachable_sandbox_fails_the_use_saying_so() -> None:
    with mock_aws():
        client = boto3.client("lambda", region_name="us-east-1")
        with pytest.raises(McpError) as failed:
            served(LambdaSandbox("no-such-function", client), lambda t, s: list_tools(t, (), s))
    assert "the tool sandbox could not be reached" in str(failed.value)


def test_on_aws_a_use_is_bounded_by_the_functions_own_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A use asked for longer than the sandbox function has left ends before the function
    does, so the caller reads why rather than Lambda's timeout."""
    handler = load_handler("sandbox")
    context = LocalContext("sandbox-bounded", timeout_ms=7_000)
    started = time.monotonic()
    answer = handler(
        {
            "serve": {
                "use": "list_tools",
                "name": "slow",
                "argv": [sys.executable, SERVER, "hang"],
                "environment": {},
                "timeout_seconds": 60,
            }
        },
        context,
    )
    # 7 s left less the margin to stop it and answer: 2 s (1 if the clock ticked first)
    assert re.search(r"the stdio MCP server `slow` did not answer within [12] s", answer["error"])
    assert time.monotonic() - started < 7


def test_on_aws_a_stored_stdio_server_is_reached_through_the_sandbox_function(
    lambda_client: Any, db: Database
) -> None:
    """The path every caller takes (listing at create and refresh, a step's call, both route
    families): `reached` with the deployment's sandbox, here the Lambda one."""
    server = McpServer(
        organization_id="org-test",
        server_name="local",
        server_type="stdio",
        command=sys.executable,
        args=[SERVER],
        env={"API_KEY": "from-the-server-record"},
    )
    settings = SETTINGS(database_url="postgresql://unused", mcp_timeout_seconds=20)
    sandbox = LambdaSandbox("cairn-sandbox", lambda_client)
    with reached(server, db, Sealer(lambda: b"k" * 32), sandbox, settings) as target:
        seen = call_tool(target, "env", {"name": "API_KEY"}, (), 20)
    assert seen == McpResult("from-the-server-record", False)
