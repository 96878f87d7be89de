"""The workflows for the local stack and tests: the ASL the CDK constructs synthesise,
executed by moto's Step Functions, with Lambda Tasks routed to the handlers in `functions/`.

Nothing here copies a definition: `definitions()` synthesises `infra/cairn_infra/workflows.py`
and resolves the template's intrinsic functions to local ARNs (moto reads plain ASL).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

from cairn.adapters.aws.stepfunctions import StepFunctionsWorkflows
from cairn.adapters.local.lambdas import functions_dir, invoke
from cairn.domain.runs import OutboxCommand

REGION, ACCOUNT = "us-east-1", "123456789012"
FUNCTION_PREFIX = "cairn-"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/cairn-workflows"


def function_arn(name: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION_PREFIX}{name}"


def resolve(node: Any, refs: dict[str, Any]) -> Any:
    """CloudFormation's Fn::Join / Ref / Fn::GetAtt, enough for a state machine definition."""
    if isinstance(node, list):
        return [resolve(n, refs) for n in node]
    if not isinstance(node, dict):
        return node
    if "Fn::Join" in node:
        separator, parts = node["Fn::Join"]
        return separator.join(str(resolve(p, refs)) for p in parts)
    if "Ref" in node:
        return refs[node["Ref"]]
    if "Fn::GetAtt" in node:
        return refs[".".join(node["Fn::GetAtt"])]
    return {k: resolve(v, refs) for k, v in node.items()}


def state_machine_definitions(template: dict[str, Any], refs: dict[str, Any]) -> dict[str, str]:
    """Every state machine of a synthesised template, by logical id, as plain ASL."""
    pseudo = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT}
    return {
        logical_id: resolve(resource["Properties"]["DefinitionString"], {**pseudo, **refs})
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
    }


# Synthesised once with these stand-ins for the timings, which are then written into the
# ASL as numbers: one build serves every start, whatever timings it asks for.
STAND_INS = {
    "approval_timeout_seconds": 987_650_001,
    "sleeptime_run_timeout_seconds": 987_650_002,
    "retry_seconds": 987_650_003,
}


def build_dir() -> Path:
    return functions_dir().parent / "build" / "local"


def cached_definitions(**timings: float) -> dict[str, str]:
    """`definitions` with these timings, from a build kept in `build/local/` under a key of
    the constructs' source and the CDK's version. A missing build is made in a child
    process (`python -m cairn.adapters.local.stepfunctions`; `make dev` runs it after installing):
    the CDK's Node.js process (~470 MB) ends with that child instead of living on in the
    stack."""
    from importlib.metadata import version

    source = (functions_dir().parent / "infra" / "cairn_infra" / "workflows.py").read_bytes()
    key = hashlib.sha256(source + version("aws-cdk-lib").encode()).hexdigest()[:16]
    cached = build_dir() / f"workflows-{key}.json"
    if not cached.exists():
        subprocess.run(
            [sys.executable, "-m", "cairn.adapters.local.stepfunctions", str(cached)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    built: dict[str, str] = json.loads(cached.read_text())
    return {name: with_timings(asl, **timings) for name, asl in built.items()}


def with_timings(asl: str, **timings: float) -> str:
    """The ASL built with `STAND_INS`, with each stand-in replaced by its timing."""
    for name, stand_in in STAND_INS.items():
        value = round(timings[name]) if name != "retry_seconds" else max(1, round(timings[name]))
        asl = re.sub(rf"(?<![\d.]){stand_in}(?![\d.])", str(value), asl)
    return asl


def build(path: Path) -> None:
    built = definitions(**STAND_INS)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(built))
    partial.replace(path)  # whole or absent, if two builds race


def definitions(
    *, approval_timeout_seconds: float, sleeptime_run_timeout_seconds: float, retry_seconds: float
) -> dict[str, str]:
    """{"approval": ASL, "sleeptime": ASL} from the CDK constructs, with these timings."""
    infra = functions_dir().parent / "infra"
    if str(infra) not in sys.path:
        sys.path.insert(0, str(infra))
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_

    from cairn_infra.workflows import ApprovalWorkflow, SleeptimeWorkflow, WorkflowTimings

    timings = WorkflowTimings(
        approval_timeout=round(approval_timeout_seconds),
        sleeptime_run_timeout=round(sleeptime_run_timeout_seconds),
        retry_interval=max(1, round(retry_seconds)),
    )
    app = cdk.App()
    stack = cdk.Stack(app, "LocalWorkflows")
    logical_ids = {}
    for name, construct in (("approval", ApprovalWorkflow), ("sleeptime", SleeptimeWorkflow)):
        handler = lambda_.Function.from_function_arn(stack, f"{name}Fn", function_arn(name))
        built = construct(stack, name.capitalize(), handler=handler, timings=timings)
        resource = built.state_machine.node.default_child
        assert isinstance(resource, cdk.CfnElement)
        logical_ids[name] = stack.get_logical_id(resource)
    template = app.synth().get_stack_by_name("LocalWorkflows").template
    found = state_machine_definitions(template, {})
    return {name: found[stack.resolve(logical_id)] for name, logical_id in logical_ids.items()}


def route_lambda_to_handlers() -> None:
    """moto's Lambda (no Docker) only echoes; make its invoke call the real handlers."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    def call_handler(
        self: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response: Any
    ) -> bytes:
        name = re.sub(r"^.*function:", "", function_name).split(":")[0]
        result = invoke(name.removeprefix(FUNCTION_PREFIX), json.loads(body or "{}"))
        return json.dumps(result).encode()

    LambdaSimpleBackend.invoke = call_handler  # type: ignore[method-assign, assignment]


def create_workflows(endpoint: str, sfn: Any, asl: dict[str, str]) -> dict[str, str]:
    """Turn on ASL execution in moto's server and create the state machines; returns ARNs."""
    config = json.dumps(
        {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
    ).encode()
    request = urllib.request.Request(
        f"{endpoint}/moto-api/config", data=config, headers={"Content-Type": "application/json"}
    )
    urllib.request.urlopen(request, timeout=10).close()
    route_lambda_to_handlers()
    return {
        name: sfn.create_state_machine(
            name=f"cairn-{name}", definition=definition, roleArn=ROLE_ARN, type="STANDARD"
        )["stateMachineArn"]
        for name, definition in asl.items()
    }


if __name__ == "__main__":
    # python -m cairn.adapters.local.stepfunctions [path]: the build `cached_definitions` reads.
    if len(sys.argv) > 1:
        build(Path(sys.argv[1]))
    else:
        cached_definitions(**STAND_INS)


def state_machine_arn(name: str) -> str:
    """The ARN moto gives the workflow `create_workflows` makes under this name."""
    return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:cairn-{name}"


class LazyWorkflows:
    """The workflows on moto's Step Functions, made when first used: moto's ASL interpreter
    is 113 MB of imports (its ANTLR parsers), which a session that never waits for an
    approval or runs a sleeptime agent should not hold."""

    def __init__(self, endpoint: str, sfn: Any, asl: dict[str, str]) -> None:
        self.endpoint, self.sfn, self.asl = endpoint, sfn, asl
        self._made: StepFunctionsWorkflows | None = None
        self._lock = threading.Lock()

    def made(self) -> StepFunctionsWorkflows:
        with self._lock:
            if self._made is None:
                arns = create_workflows(self.endpoint, self.sfn, self.asl)
                assert arns == {name: state_machine_arn(name) for name in self.asl}, arns
                self._made = StepFunctionsWorkflows(arns["approval"], arns["sleeptime"], self.sfn)
            return self._made

    @property
    def client(self) -> Any:
        """The Step Functions client, the workflows made (for what reads their executions)."""
        return self.made().client

    def start(self, command: OutboxCommand) -> None:
        self.made().start(command)

    def succeed(self, token: str, output: dict[str, Any]) -> bool:
        return self.made().succeed(token, output)

    def fail(self, token: str, error: str, cause: str) -> bool:
        return self.made().fail(token, error, cause)
