"""The cost model is code (bench/cost.py): it reads each shape's template, and no resource
type goes unpriced."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.infra.test_stack import synth

ROOT = Path(__file__).resolve().parents[2]


def cost_model() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cost", ROOT / "bench" / "cost.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cost"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


COST = cost_model()
SHAPES = {
    "production": {},
    "dev": {"dev": "true"},
    "tool_network": {"tool_network": "true"},
    "dev+tool_network": {"dev": "true", "tool_network": "true"},
    "small": {"size": "small"},
    "small+tool_network": {"size": "small", "tool_network": "true"},
    "small+sweep_minutes=15": {"size": "small", "sweep_minutes": "15"},
}


@pytest.fixture(scope="module")
def templates() -> dict[str, dict[str, Any]]:
    return {name: synth(**context)[1].to_json() for name, context in SHAPES.items()}


def test_every_resource_type_of_every_shape_has_a_price_line_or_is_free(
    templates: dict[str, dict[str, Any]],
) -> None:
    for name, template in templates.items():
        assert COST.unpriced(template) == set(), name
    # A type no line prices and not known to be free is named, so it cannot go uncounted.
    template = json.loads(json.dumps(templates["production"]))
    template["Resources"]["Made"] = {"Type": "AWS::Kinesis::Stream", "Properties": {}}
    assert COST.unpriced(template) == {"AWS::Kinesis::Stream"}
    assert "Not priced: AWS::Kinesis::Stream" in COST.report(template)


def test_docs_show_the_figures_the_model_prints(templates: dict[str, dict[str, Any]]) -> None:
    """docs/deploy.md's cost tables are bench/cost.py's output (`--write-docs` writes them)."""
    shown = COST.documented(COST.DOCS.read_text())
    assert set(shown) == set(COST.DOCUMENTED)
    for name in COST.DOCUMENTED:
        assert shown[name].strip() == COST.report(templates[name]).strip(), (
            f"docs/deploy.md's {name} figures are stale: run bench/cost.py --write-docs"
        )


def test_the_floor_is_read_from_the_template(templates: dict[str, dict[str, Any]]) -> None:
    floor = {
        n: {line.part: line.dollars for line in COST.idle_floor(t)} for n, t in templates.items()
    }
    prod, dev = floor["production"], floor["dev"]
    # Two NAT gateways and their addresses in production, one in dev; a reader in production.
    assert prod["NAT gateways"] == 2 * dev["NAT gateways"]
    assert prod["Aurora Serverless v2"] == 2 * dev["Aurora Serverless v2"]
    assert sum(dev.values()) < sum(prod.values())
    tools = floor["tool_network"]
    assert set(tools) - set(prod) == {
        "the tools' egress proxy (Fargate, ARM)",
        "its private DNS zone",
        "Container Insights on the proxy's cluster",  # its cluster publishes them
    }
    assert tools["Secrets Manager"] > prod["Secrets Manager"]  # the passes' signing key
    report = COST.report(templates["production"], 2.0)
    assert "| **total** |" in report and "Not priced" not in report


def test_a_million_steps_cost_more_with_a_slower_model(
    templates: dict[str, dict[str, Any]],
) -> None:
    fast, slow = (
        sum(line.dollars for line in COST.per_million_steps(templates["production"], latency))
        for latency in (1.0, 3.0)
    )
    # Each second of model latency is a GB-second of the 1 GB step function a step.
    assert slow - fast == pytest.approx(2 * 1e6 * COST.PRICES["lambda_gb_second"])


def test_the_small_shape_idles_under_twelve_dollars(templates: dict[str, dict[str, Any]]) -> None:
    """No proxy, no NAT gateway, a cluster that pauses and a sweeper that leaves it paused
    while nothing runs, alarms sized for it and no dashboard: $12 a month or less left
    alone; waking it is priced per spell of activity, from the sweeper's schedule."""
    floor = {
        n: {line.part: line.dollars for line in COST.idle_floor(t)} for n, t in templates.items()
    }
    small = floor["small"]
    assert sum(small.values()) <= 12
    assert "RDS Proxy" not in small and "NAT gateways" not in small
    assert "SnapStart cache" not in small and small["NAT instance (t4g.nano)"] < 5
    assert small["CloudWatch alarms and dashboards"] < 1.5  # 9 alarms, no dashboard
    paused = "Aurora Serverless v2, paused (the sweeper skips its rounds while nothing runs)"
    assert small[paused] == 0
    assert sum(floor["small+tool_network"].values()) > sum(small.values())
    steps = {line.part for line in COST.per_million_steps(templates["small"], 2.0)}
    assert "Aurora awake for the steps (at most: one step at a time)" in steps
    assert "NAT data to the provider" not in steps

    def wakes(name: str, bursts: float = 10) -> dict[str, float]:
        profile = COST.Profile(bursts_per_day=bursts)
        return {x.part: x.dollars for x in COST.wakes_per_month(templates[name], profile)}

    hourly, quarterly = wakes("small"), wakes("small+sweep_minutes=15")
    after = "Aurora awake after each spell"
    assert hourly[after] == quarterly[after] > 0
    assert wakes("small", 20)[after] == pytest.approx(2 * hourly[after])
    rounds = "the sweeper's rounds after each spell"
    assert quarterly[rounds] > hourly[rounds]  # rounds every 15 minutes: more of them
    assert COST.wakes_per_month(templates["production"]) == []  # never pauses


def test_the_steps_metrics_are_priced_per_organization_from_what_they_publish(
    templates: dict[str, dict[str, Any]],
) -> None:
    """The steps' custom metrics (EMF) bill per metric-month: the stack's set, and one more
    set for each organization with steps that month; the count is the adapter's own list."""
    from cairn.adapters.aws.metrics import METRICS, PER_ORGANIZATION

    lines = {x.part: x.dollars for x in COST.metrics_per_month(templates["production"], 4)}
    price = COST.PRICES["custom_metric_month"]
    assert lines == {
        "the stack's (at most: published every hour)": pytest.approx(len(METRICS) * price),
        "each organization's (at most: published every hour)": pytest.approx(
            4 * len(PER_ORGANIZATION) * price
        ),
    }
    assert "Metrics in a month with steps, 10 organizations" in COST.report(templates["small"], 2.0)


def test_the_lines_a_send_adds_and_the_guesses_are_said(
    templates: dict[str, dict[str, Any]],
) -> None:
    """Lines an independent count found missing: the api function's own invocation, X-Ray on
    the send, the step and its embedding job, the embedding job's invocation, the storage the
    steps leave, the organizations' provider-key secrets; and every line resting on a guess
    says so."""
    steps = {x.part: x for x in COST.per_million_steps(templates["production"], 2.0)}
    assert any(p.startswith("api function") for p in steps)
    (xray,) = [x for p, x in steps.items() if p.startswith("X-Ray")]
    assert xray.dollars == 3 * COST.PRICES["xray_million"]
    embeddings = steps["message embeddings"]
    assert embeddings.dollars > COST.PRICES["lambda_requests_million"] and embeddings.estimate
    assert any(p.startswith("Aurora storage the steps leave") for p in steps)
    assert not steps["SQS FIFO"].estimate and steps["Aurora I/O"].estimate
    keys = COST.Profile(provider_keys=25)
    floor = {x.part: x.dollars for x in COST.idle_floor(templates["small"], keys)}
    mine = "organizations' own provider keys (a secret each, made at run time)"
    assert floor[mine] == pytest.approx(25 * COST.PRICES["secret_month"])
    report = COST.report(templates["production"], 2.0)
    assert "| Aurora I/O (estimate) |" in report and "| SQS FIFO |" in report


def test_a_small_shape_deployed_where_the_rds_roots_do_not_reach_fails_at_once(
    templates: dict[str, dict[str, Any]],
) -> None:
    """The small shape checks its cluster against the vendored RDS roots (AWS's global
    bundle): every commercial region the CDK knows is covered but the two that opened after
    the copy was taken, and there the deploy fails at CloudFormation's rule, saying what to
    do, not at the migrations' certificate check."""
    import aws_cdk.region_info as region_info

    from cairn_infra.packaging import rds_ca_regions

    rule = templates["small"]["Rules"]["RdsCaCoversRegion"]
    (assertion,) = rule["Assertions"]
    allowed = set(assertion["Assert"]["Fn::Contains"][0])
    assert allowed == set(rds_ca_regions()) and "us-east-1" in allowed
    assert "make rds-ca" in assertion["AssertDescription"]
    commercial = {r.name for r in region_info.RegionInfo.regions if r.partition == "aws"}
    # The first copy (a package's) lacked these five: a cluster there failed its check.
    assert {
        "ca-west-1",
        "il-central-1",
        "ap-southeast-5",
        "ap-southeast-7",
        "mx-central-1",
    } <= allowed
    # Opened in late 2025, after the copy: refused until `make rds-ca` (then the rule can go).
    assert commercial - allowed == {"ap-east-2", "ap-southeast-6"}
    # no check against the roots where a proxy, with its own trust, fronts the cluster
    assert "RdsCaCoversRegion" not in templates["production"].get("Rules", {})
