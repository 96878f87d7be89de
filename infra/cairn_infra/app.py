"""Putting the stack and its checks together, for `infra/app.py` and the tests alike."""

from __future__ import annotations

import json

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from cairn_infra.packaging import ROOT
from cairn_infra.stack import CairnStack
from cairn_infra.suppressions import acknowledge
from cairn_infra.workflows import WorkflowTimings


def project_context() -> dict[str, object]:
    """cdk.json's context: its flags and CDK's recommended feature flags, which the CLI
    gives the app (tests synthesise with them too, so they check what deploys)."""
    context: dict[str, object] = json.loads((ROOT / "cdk.json").read_text())["context"]
    return context


def flag(app: cdk.App, name: str, default: bool = False) -> bool:
    value = app.node.try_get_context(name)
    if value is None:
        return default
    return str(value).lower() in ("true", "1", "yes")


def number(app: cdk.App, name: str) -> int | None:
    """An optional whole-number context value (`-c name=20`)."""
    value = app.node.try_get_context(name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}: a whole number, not {value!r}") from None


def build_app(app: cdk.App) -> CairnStack:
    hours = float(app.node.try_get_context("approval_timeout_hours") or 168)
    stack = CairnStack(
        app,
        str(app.node.try_get_context("stack_name") or "Cairn"),
        dev=flag(app, "dev"),
        skip_bundling=flag(app, "skip_bundling"),
        tool_network=flag(app, "tool_network"),
        sweep_minutes=int(app.node.try_get_context("sweep_minutes") or 0) or None,
        api_rate_limit=int(app.node.try_get_context("api_rate_limit") or 100),
        stream_concurrency=number(app, "stream_concurrency"),
        bedrock_models=tuple(
            m.strip()
            for m in str(app.node.try_get_context("bedrock_models") or "").split(",")
            if m.strip()
        ),
        timings=WorkflowTimings(approval_timeout=round(hours * 3600)),
        description="Cairn: stateful memory agents (Letta-compatible) on AWS serverless",
    )
    acknowledge(stack, stack.bedrock_models, dev=flag(app, "dev"))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))  # type: ignore[attr-defined]
    return stack
