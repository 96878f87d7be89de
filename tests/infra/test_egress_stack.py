"""`-c tool_network=true`: the egress proxy service, and the one way the sandbox reaches it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk

from cairn_infra.app import build_app, project_context
from cairn_infra.egress import PORT, SOURCE
from tests.infra.test_stack import as_list, function, resources

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def template() -> Iterator[dict[str, Any]]:
    app = cdk.App(context={**project_context(), "skip_bundling": "true", "tool_network": "true"})
    stack = build_app(app)
    app.synth()  # cdk-nag's AwsSolutions checks pass with the proxy in the stack
    yield cdk.assertions.Template.from_stack(stack).to_json()


def test_without_the_flag_there_is_no_proxy() -> None:
    from tests.infra.test_stack import synth

    _, plain = synth()
    assert resources(plain.to_json(), "AWS::ECS::Service") == {}


def test_the_proxy_runs_the_shipped_source_with_its_key_from_a_secret(
    template: dict[str, Any],
) -> None:
    (task,) = resources(template, "AWS::ECS::TaskDefinition").values()
    (container,) = task["Properties"]["ContainerDefinitions"]
    assert container["Command"][:3] == ["python", "-I", "-c"]
    assert container["Command"][3] == SOURCE.read_text()
    assert [s["Name"] for s in container["Secrets"]] == ["CAIRN_EGRESS_KEY"]
    assert "Environment" not in container and container["ReadonlyRootFilesystem"] is True
    assert task["Properties"]["RuntimePlatform"]["CpuArchitecture"] == "ARM64"
    (service,) = resources(template, "AWS::ECS::Service").values()
    config = service["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]
    private = {
        name
        for name, sub in resources(template, "AWS::EC2::Subnet").items()
        if {"Key": "aws-cdk:subnet-type", "Value": "Private"} in sub["Properties"]["Tags"]
    }
    assert config["AssignPublicIp"] == "DISABLED"
    assert {s["Ref"] for s in config["Subnets"]} <= private
    assert service["Properties"]["DesiredCount"] == 2


def test_the_sandbox_reaches_the_proxy_and_nothing_else(template: dict[str, Any]) -> None:
    props = function(template, "sandbox")["Properties"]
    (sandbox_group,) = props["VpcConfig"]["SecurityGroupIds"]
    groups = resources(template, "AWS::EC2::SecurityGroup")
    sandbox_sg = groups[sandbox_group["Fn::GetAtt"][0]]["Properties"]
    (proxy_id,) = [k for k in groups if k.startswith("EgressProxy")]
    assert sandbox_sg["SecurityGroupEgress"] == [
        {
            "IpProtocol": "tcp",
            "FromPort": PORT,
            "ToPort": PORT,
            "DestinationSecurityGroupId": {"Fn::GetAtt": [proxy_id, "GroupId"]},
            "Description": "the egress proxy, and nothing else",
        }
    ]
    # Inline on the group: a separate egress resource would leave EC2's allow-all default.
    assert resources(template, "AWS::EC2::SecurityGroupEgress") == {}
    rules = resources(template, "AWS::EC2::SecurityGroupIngress").values()
    ingress = [
        r["Properties"]
        for r in rules
        if r["Properties"]["GroupId"] == {"Fn::GetAtt": [proxy_id, "GroupId"]}
    ]
    assert ingress == [
        {
            "IpProtocol": "tcp",
            "FromPort": PORT,
            "ToPort": PORT,
            "Description": "tool calls through the proxy",
            "GroupId": {"Fn::GetAtt": [proxy_id, "GroupId"]},
            "SourceSecurityGroupId": sandbox_group,
        }
    ]
    assert "SecurityGroupIngress" not in groups[proxy_id]["Properties"]


def test_only_the_callers_that_sign_passes_read_the_key(template: dict[str, Any]) -> None:
    (key,) = [k for k in resources(template, "AWS::SecretsManager::Secret") if "Egress" in k]
    readers = set()
    for policy in resources(template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if {"Ref": key} in as_list(statement["Resource"]):  # minimised policies merge
                readers.update(r["Ref"] for r in policy["Properties"]["Roles"])
    roles = {
        name: function(template, name)["Properties"]["Role"]["Fn::GetAtt"][0]
        for name in ("api", "step", "sandbox", "sweeper")
    }
    assert roles["api"] in readers and roles["step"] in readers
    assert roles["sandbox"] not in readers and roles["sweeper"] not in readers
    for name in ("api", "step"):
        env = function(template, name)["Properties"]["Environment"]["Variables"]
        assert env["CAIRN_TOOL_EGRESS_PROXY"] == f"egress.cairn.internal:{PORT}"
        assert env["CAIRN_TOOL_EGRESS_SECRET_ARN"] == {"Ref": key}
    sandbox_env = function(template, "sandbox")["Properties"]["Environment"]["Variables"]
    assert not any(k.startswith("CAIRN_TOOL_EGRESS") for k in sandbox_env)


def test_the_containers_command_runs_alone_on_a_clean_python(template: dict[str, Any]) -> None:
    """What the container runs, as it runs it: `python -I -c <source>`, nothing of Cairn."""
    (task,) = resources(template, "AWS::ECS::TaskDefinition").values()
    command = task["Properties"]["ContainerDefinitions"][0]["Command"]
    missing = subprocess.run(
        [sys.executable, *command[1:]],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=30,
    )
    assert missing.returncode == 2 and "CAIRN_EGRESS_KEY" in missing.stderr
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"PATH": "/usr/bin:/bin", "CAIRN_EGRESS_KEY": "k" * 64, "CAIRN_EGRESS_PORT": str(port)}
    proxy = subprocess.Popen([sys.executable, *command[1:]], env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline and proxy.poll() is None
                time.sleep(0.1)
        with sock:
            sock.sendall(b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
            assert sock.recv(4096).startswith(b"HTTP/1.1 407")
    finally:
        proxy.kill()
        proxy.wait()
