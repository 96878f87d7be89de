"""cfn-lint, the linter AWS users run on templates, on every shape the stack deploys in."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from cfnlint.api import ManualArgs, lint

from tests.infra.test_stack import synth

# Each check set aside, and why.
IGNORED = {
    # CDK writes DependsOn on a function's role and on the cluster although a GetAtt or Ref
    # already orders them; CloudFormation accepts the duplicate and it changes nothing.
    "W3005": "a DependsOn that a Ref or GetAtt already implies (written by CDK)",
}
# Regions the stack is meant for (pgvector 0.8 on Aurora PostgreSQL 17, Serverless v2 at
# 0 ACU, Lambda SnapStart for Python, Step Functions): cfn-lint checks each one's resource
# specification.
REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-2"]


@pytest.mark.parametrize(
    "context",
    [
        {},
        {"dev": "true"},
        {"tool_network": "true"},
        {"stack_name": "CairnTwo"},
        {"stream_concurrency": "20"},
        {"dev": "true", "tool_network": "true", "stream_concurrency": "5"},
        {"size": "small"},
        {"size": "small", "dev": "true", "tool_network": "true"},
        {
            "size": "small",
            "dashboard": "true",
            "single_tenant": "true",
            "otel_endpoint": "https://otel.example.com:4318/",
        },
    ],
    ids=[
        "production",
        "dev",
        "tool_network",
        "second-stack",
        "stream_concurrency",
        "dev+tool_network+stream_concurrency",
        "small",
        "small+dev+tool_network",
        "small+dashboard+single_tenant+otel_endpoint",
    ],
)
def test_the_template_passes_cfn_lint(context: dict[str, str]) -> None:
    _, template = synth(**context)
    found = lint(
        json.dumps(template.to_json()),
        regions=REGIONS,
        config=ManualArgs(ignore_checks=list(IGNORED)),
    )
    assert [f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})" for m in found] == []
