"""What a shape of the stack costs, read from its synthesised template.

    .venv/bin/python bench/cost.py                       # production
    .venv/bin/python bench/cost.py -c dev=true -c tool_network=true --latency 3
    .venv/bin/python bench/cost.py -c size=small

Prints the idle floor per month (what the stack costs with nothing happening) and the cost
per million steps at a model latency, each line with its arithmetic. Prices are list
prices of us-east-1 (PRICES, below, dated): check your region's pricing pages. Every
resource type of the template is priced, billed by use only, or free (`tests/infra/
test_cost.py` fails on a type in none of them, so a new resource cannot go uncounted).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HOURS = 730  # a month
# List prices, us-east-1, November 2026 (each service's AWS pricing page).
PRICES = {
    "nat_hour": 0.045,  # NAT gateway, per hour
    "nat_gb": 0.045,  # NAT gateway, per GB processed
    "ipv4_hour": 0.005,  # a public IPv4 address (a NAT gateway's or instance's), per hour
    "t4g.nano_hour": 0.0042,  # EC2 on-demand (the small shape's NAT instance), per hour
    "gp3_gb_month": 0.08,  # EBS gp3, per GB-month
    "acu_hour": 0.12,  # Aurora Serverless v2 (Standard), per ACU-hour
    "proxy_acu_hour": 0.015,  # RDS Proxy, per ACU-hour of its Serverless v2 target
    "proxy_min_acus": 8,  # RDS Proxy bills Serverless v2 for at least 8 ACUs
    "aurora_io_million": 0.20,  # Aurora Standard I/O, per million requests
    "secret_month": 0.40,  # Secrets Manager, per secret
    "alarm_metric_month": 0.10,  # CloudWatch, per standard-resolution alarm metric
    "dashboard_month": 3.00,  # CloudWatch dashboard
    "hosted_zone_month": 0.50,  # Route 53 (the egress proxy's private DNS namespace)
    "fargate_vcpu_hour": 0.03238,  # Fargate on ARM, per vCPU-hour
    "fargate_gb_hour": 0.00356,  # Fargate on ARM, per GB-hour
    "lambda_gb_second": 0.0000133334,  # Lambda on ARM, per GB-second
    "lambda_requests_million": 0.20,
    "snapstart_cache_gb_second": 0.0000015046,  # SnapStart (Python), cache per GB-second
    "sqs_fifo_million": 0.50,  # SQS FIFO, per million requests
    "logs_gb": 0.50,  # CloudWatch Logs ingestion, per GB
    "custom_metric_month": 0.30,  # CloudWatch custom metric (EMF), per metric-month (first 10k)
}
# Billed only for what is used (requests, storage, ingestion): nothing while idle.
BY_USE = {
    "AWS::ApiGatewayV2::Api",
    "AWS::Lambda::Function",
    "AWS::Lambda::Url",
    "AWS::SQS::Queue",
    "AWS::StepFunctions::StateMachine",
    "AWS::Logs::LogGroup",
    "AWS::EC2::FlowLog",
    "AWS::SNS::Topic",
    "AWS::RDS::DBCluster",
    "AWS::Lambda::LayerVersion",
    "AWS::S3::Bucket",
    "AWS::Scheduler::ScheduleGroup",  # its schedules: by invocations, 14 million a month free
}
# No charge of their own.
FREE = {
    "AWS::ApiGatewayV2::Integration",
    "AWS::ApiGatewayV2::Route",
    "AWS::ApiGatewayV2::Stage",
    "AWS::CloudFormation::CustomResource",
    "AWS::EC2::InternetGateway",
    "AWS::EC2::Route",
    "AWS::EC2::RouteTable",
    "AWS::EC2::SecurityGroup",
    "AWS::EC2::SecurityGroupIngress",
    "AWS::EC2::Subnet",
    "AWS::EC2::SubnetRouteTableAssociation",
    "AWS::EC2::VPC",
    "AWS::EC2::VPCGatewayAttachment",
    "AWS::ECS::Cluster",
    "AWS::Events::Rule",
    "AWS::IAM::Policy",
    "AWS::IAM::Role",
    "AWS::Lambda::Alias",
    "AWS::Lambda::EventSourceMapping",
    "AWS::Lambda::Permission",
    "AWS::Lambda::Version",
    "AWS::Logs::MetricFilter",
    "AWS::RDS::DBProxyTargetGroup",
    "AWS::RDS::DBSubnetGroup",
    "AWS::SNS::TopicPolicy",
    "AWS::SQS::QueuePolicy",
    "AWS::SecretsManager::ResourcePolicy",
    "AWS::SecretsManager::RotationSchedule",
    "AWS::SecretsManager::SecretTargetAttachment",
    "AWS::ServiceDiscovery::Service",
    "AWS::ECS::TaskDefinition",
    "Custom::VpcRestrictDefaultSG",
    "AWS::IAM::InstanceProfile",
    "AWS::S3::BucketPolicy",
    "Custom::S3AutoDeleteObjects",
}
# Priced below, by the idle floor.
PRICED = {
    "AWS::EC2::NatGateway",
    "AWS::EC2::EIP",
    "AWS::RDS::DBInstance",
    "AWS::RDS::DBProxy",
    "AWS::SecretsManager::Secret",
    "AWS::CloudWatch::Alarm",
    "AWS::CloudWatch::Dashboard",
    "AWS::ServiceDiscovery::PrivateDnsNamespace",
    "AWS::ECS::Service",
    "AWS::EC2::Instance",
}
# Aurora pauses an instance this long after its last connection closed (SecondsUntilAutoPause),
# and a function's idle session closes after CAIRN_DB_IDLE_SESSION_SECONDS: each wake-up of a
# paused cluster keeps it running, at its 0.5 ACU floor, for about their sum.


@dataclass(frozen=True)
class Line:
    part: str
    arithmetic: str
    dollars: float


def unpriced(template: dict[str, Any]) -> set[str]:
    """Resource types the model has no word for (a test keeps this empty)."""
    types = {r["Type"] for r in template["Resources"].values()}
    return types - PRICED - BY_USE - FREE


def _of(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r.get("Properties", {}) for r in template["Resources"].values() if r["Type"] == kind]


def _function(template: dict[str, Any], key: str) -> dict[str, Any]:
    (found,) = [
        r["Properties"]
        for name, r in template["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function"
        and re.fullmatch(f"Functions{key}[0-9A-F]{{8}}", name)
    ]
    return found


def idle_floor(template: dict[str, Any]) -> list[Line]:
    """What the stack costs a month with nothing happening, part by part."""
    p, lines = PRICES, []
    if nats := len(_of(template, "AWS::EC2::NatGateway")):
        lines.append(
            Line(
                "NAT gateways",
                f"{nats} x ${p['nat_hour']}/h x {HOURS} h",
                nats * p["nat_hour"] * HOURS,
            )
        )
    nat_instances = _of(template, "AWS::EC2::Instance")
    for instance in nat_instances:
        kind = instance["InstanceType"]
        lines.append(
            Line(
                f"NAT instance ({kind})",
                f"${p[f'{kind}_hour']}/h x {HOURS} h",
                p[f"{kind}_hour"] * HOURS,
            )
        )
        gb = sum(d["Ebs"]["VolumeSize"] for d in instance.get("BlockDeviceMappings", []))
        lines.append(
            Line("its root volume (gp3)", f"{gb} GB x ${p['gp3_gb_month']}", gb * p["gp3_gb_month"])
        )
    # An instance in a public subnet has a public address as a NAT gateway's Elastic IP is.
    if ips := len(_of(template, "AWS::EC2::EIP")) + len(nat_instances):
        lines.append(
            Line(
                "public IPv4 addresses (the NATs')",
                f"{ips} x ${p['ipv4_hour']}/h x {HOURS} h",
                ips * p["ipv4_hour"] * HOURS,
            )
        )
    (cluster,) = _of(template, "AWS::RDS::DBCluster")
    scaling = cluster["ServerlessV2ScalingConfiguration"]
    low, instances = float(scaling["MinCapacity"]), len(_of(template, "AWS::RDS::DBInstance"))
    proxied = bool(_of(template, "AWS::RDS::DBProxy"))
    # Auto-pause and RDS Proxy do not go together (the proxy holds connections to the
    # cluster): behind a proxy a 0 ACU minimum is billed as the 0.5 it runs at.
    held = max(low, 0.5) if proxied else low
    if held == 0:
        lines.append(_woken(template, instances, int(scaling["SecondsUntilAutoPause"])))
    else:
        lines.append(
            Line(
                "Aurora Serverless v2",
                f"{instances} instances x {held:g} ACU x "
                f"${p['acu_hour']}/ACU-h x {HOURS} h"
                + (" (a proxy keeps it from pausing)" if proxied and low == 0 else ""),
                instances * held * p["acu_hour"] * HOURS,
            )
        )
    if proxied:
        acus = max(p["proxy_min_acus"], held * instances)
        lines.append(
            Line(
                "RDS Proxy",
                f"at least {acus:g} ACUs x ${p['proxy_acu_hour']}/ACU-h x {HOURS} h",
                acus * p["proxy_acu_hour"] * HOURS,
            )
        )
    secrets = len(_of(template, "AWS::SecretsManager::Secret"))
    lines.append(
        Line(
            "Secrets Manager",
            f"{secrets} secrets x ${p['secret_month']}",
            secrets * p["secret_month"],
        )
    )
    metrics = sum(
        sum(1 for m in a["Metrics"] if "MetricStat" in m) if "Metrics" in a else 1
        for a in _of(template, "AWS::CloudWatch::Alarm")
    )
    boards = len(_of(template, "AWS::CloudWatch::Dashboard"))
    watching = metrics * p["alarm_metric_month"] + boards * p["dashboard_month"]
    lines.append(
        Line(
            "CloudWatch alarms and dashboards",
            f"{metrics} alarm metrics x ${p['alarm_metric_month']} + {boards} x "
            f"${p['dashboard_month']}",
            watching,
        )
    )
    for service in _of(template, "AWS::ECS::Service"):
        (task,) = _of(template, "AWS::ECS::TaskDefinition")
        count, cpu, gb = (
            service.get("DesiredCount", 1),
            int(task["Cpu"]) / 1024,
            int(task["Memory"]) / 1024,
        )
        hourly = cpu * p["fargate_vcpu_hour"] + gb * p["fargate_gb_hour"]
        lines.append(
            Line(
                "the tools' egress proxy (Fargate, ARM)",
                f"{count} tasks x ({cpu:g} vCPU + {gb:g} GB) x {HOURS} h",
                count * hourly * HOURS,
            )
        )
    if zones := len(_of(template, "AWS::ServiceDiscovery::PrivateDnsNamespace")):
        lines.append(
            Line(
                "its private DNS zone",
                f"{zones} x ${p['hosted_zone_month']}",
                zones * p["hosted_zone_month"],
            )
        )
    lines.extend(_sweeper(template))
    lines.extend(_snapstart(template))
    return lines


def _woken(template: dict[str, Any], instances: int, pause_after: int) -> Line:
    """A cluster that pauses costs nothing asleep; the sweeper wakes it on its schedule."""
    idle = int(
        _function(template, "sweeper")["Environment"]["Variables"].get(
            "CAIRN_DB_IDLE_SESSION_SECONDS", 0
        )
    )
    wakes = _sweeps(template)
    awake = pause_after + idle
    return Line(
        "Aurora Serverless v2, paused but for the sweeper's wake-ups",
        f"{wakes:,.0f} wakes x ({pause_after} s to pause + {idle} s idle session) x "
        f"{instances} x 0.5 ACU x ${PRICES['acu_hour']}/ACU-h",
        wakes * awake / 3600 * instances * 0.5 * PRICES["acu_hour"],
    )


def _sweeps(template: dict[str, Any]) -> float:
    """The sweeper's runs a month, from its schedule."""
    for rule in _of(template, "AWS::Events::Rule"):
        expression = rule.get("ScheduleExpression", "")
        if found := re.fullmatch(r"rate\((\d+) (minute|hour|day)s?\)", expression):
            minutes = int(found.group(1)) * {"minute": 1, "hour": 60, "day": 1440}[found.group(2)]
            return HOURS * 60 / minutes
    raise ValueError("no sweeper schedule in the template")


def _sweeper(template: dict[str, Any]) -> Iterator[Line]:
    runs = _sweeps(template)
    gb = _function(template, "sweeper").get("MemorySize", 128) / 1024
    # ~0.3 s a sweep with nothing to do (bench: the sweeper's rounds on an idle stack).
    yield Line(
        "sweeper",
        f"{runs:,.0f} runs x 0.3 s x {gb:g} GB",
        runs * 0.3 * gb * PRICES["lambda_gb_second"],
    )


def _snapstart(template: dict[str, Any]) -> Iterator[Line]:
    snapped = [
        f
        for f in _of(template, "AWS::Lambda::Function")
        if f.get("SnapStart", {}).get("ApplyOn") == "PublishedVersions"
    ]
    if snapped:
        gb = sum(f.get("MemorySize", 128) for f in snapped) / 1024
        seconds = HOURS * 3600
        yield Line(
            "SnapStart cache",
            f"{len(snapped)} functions' {gb:g} GB x "
            f"{seconds:,} s x ${PRICES['snapstart_cache_gb_second']}/GB-s",
            gb * seconds * PRICES["snapstart_cache_gb_second"],
        )


def per_million_steps(template: dict[str, Any], latency: float) -> list[Line]:
    """A million steps, the model's tokens excluded; a step waits `latency` s for it."""
    p = PRICES
    gb = _function(template, "step").get("MemorySize", 1024) / 1024
    step_s = latency + 0.1
    lines = [
        Line(
            "step function",
            f"1e6 x {step_s:g} s x {gb:g} GB x ${p['lambda_gb_second']} + requests",
            1e6 * step_s * gb * p["lambda_gb_second"] + p["lambda_requests_million"],
        ),
        Line(
            "SQS FIFO", f"3 requests a step x ${p['sqs_fifo_million']}/M", 3 * p["sqs_fifo_million"]
        ),
        Line(
            "Aurora I/O",
            f"~20 I/Os a step x ${p['aurora_io_million']}/M",
            20 * p["aurora_io_million"],
        ),
        Line(
            "message embeddings",
            "at most a job per step: 0.2 s x 1 GB + 3 SQS requests",
            1e6 * 0.2 * p["lambda_gb_second"] + 3 * p["sqs_fifo_million"],
        ),
        Line("CloudWatch Logs", f"~1 KB a step x ${p['logs_gb']}/GB", 1e6 * 1e-6 * p["logs_gb"]),
        Line(
            "steps' metrics (two EMF log lines)",
            f"~0.8 KB a step x ${p['logs_gb']}/GB",
            1e6 * 0.8e-6 * p["logs_gb"],
        ),
    ]
    (cluster,) = _of(template, "AWS::RDS::DBCluster")
    if float(cluster["ServerlessV2ScalingConfiguration"]["MinCapacity"]) == 0 and not _of(
        template, "AWS::RDS::DBProxy"
    ):  # a cluster that pauses is billed while steps keep it awake (others: in the floor)
        lines.append(
            Line(
                "Aurora awake for the steps (at most: one step at a time)",
                f"1e6 x {step_s:g} s x 0.5 ACU x ${p['acu_hour']}/ACU-h",
                1e6 * step_s / 3600 * 0.5 * p["acu_hour"],
            )
        )
    if _of(template, "AWS::EC2::NatGateway"):  # a NAT instance charges no processing
        lines.append(
            Line(
                "NAT data to the provider",
                f"~30 KB a step x ${p['nat_gb']}/GB",
                1e6 * 30e-6 * p["nat_gb"],
            )
        )
    return lines


def metrics_per_month(template: dict[str, Any], organizations: int) -> list[Line]:
    """The steps' custom metrics (CAIRN_METRICS=emf), billed per metric-month while they are
    published: each for the stack, and again for each organization with steps that month.
    None in a month without steps (nothing is published)."""
    environment = _function(template, "step").get("Environment", {}).get("Variables", {})
    if environment.get("CAIRN_METRICS") != "emf":
        return []
    sys.path.insert(0, str(ROOT / "layers" / "runtime" / "python"))
    from cairn.adapters.aws.metrics import METRICS, PER_ORGANIZATION

    n, each, price = len(METRICS), len(PER_ORGANIZATION), PRICES["custom_metric_month"]
    return [
        Line("the stack's", f"{n} metrics x ${price}", n * price),
        Line(
            "each organization's",
            f"{organizations} organizations x {each} metrics x ${price}",
            organizations * each * price,
        ),
    ]


def synthesised(context: dict[str, str]) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "infra"))
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from cairn_infra.app import build_app, project_context

    app = cdk.App(context={**project_context(), "skip_bundling": "true", **context})
    stack = build_app(app)
    template: dict[str, Any] = Template.from_stack(stack).to_json()
    return template


def report(template: dict[str, Any], latency: float, organizations: int = 10) -> str:
    out = []
    for title, lines in (
        ("Idle floor, per month", idle_floor(template)),
        (f"Per million steps, model latency {latency:g} s", per_million_steps(template, latency)),
        (
            f"Metrics in a month with steps, {organizations} organizations active",
            metrics_per_month(template, organizations),
        ),
    ):
        if not lines:
            continue
        out.append(f"{title}:\n")
        out.append("| part | arithmetic | $ |\n| --- | --- | --- |")
        out += [f"| {x.part} | {x.arithmetic} | {x.dollars:,.2f} |" for x in lines]
        out.append(f"| **total** | | **{sum(x.dollars for x in lines):,.2f}** |\n")
    if missing := unpriced(template):
        out.append(f"Not priced: {', '.join(sorted(missing))}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        default=[],
        help="a context flag as name=value, as `cdk -c`",
    )
    parser.add_argument("--latency", type=float, default=2.0, help="the model's, in seconds")
    parser.add_argument(
        "--organizations", type=int, default=10, help="organizations with steps in a month"
    )
    args = parser.parse_args(argv)
    context = dict(c.split("=", 1) for c in args.context)
    print(report(synthesised(context), args.latency, args.organizations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
