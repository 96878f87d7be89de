"""Putting the stack and its checks together, for `infra/app.py` and the tests alike."""

from __future__ import annotations

import json

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from cairn_infra.packaging import ROOT
from cairn_infra.shape import Shape, parse_flag
from cairn_infra.stack import CairnStack
from cairn_infra.suppressions import acknowledge


def project_context() -> dict[str, object]:
    """cdk.json's context: its flags and CDK's recommended feature flags, which the CLI
    gives the app (tests synthesise with them too, so they check what deploys)."""
    context: dict[str, object] = json.loads((ROOT / "cdk.json").read_text())["context"]
    return context


def build_app(app: cdk.App) -> CairnStack:
    shape = Shape.from_context(app.node.try_get_context)
    stack = CairnStack(
        app,
        str(app.node.try_get_context("stack_name") or "Cairn"),
        shape=shape,
        skip_bundling=parse_flag("skip_bundling", app.node.try_get_context("skip_bundling")),
        description="Cairn: stateful memory agents (Letta-compatible) on AWS serverless",
    )
    acknowledge(stack, shape.bedrock_models, dev=shape.dev, small=shape.small)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stack
