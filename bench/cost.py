"""What a shape of the stack costs, read from its synthesised template.

    .venv/bin/python bench/cost.py                       # production
    .venv/bin/python bench/cost.py -c dev=true -c tool_network=true --latency 3
    .venv/bin/python bench/cost.py -c size=small

    .venv/bin/python bench/cost.py --write-docs         # docs/deploy.md's figures

Prints the idle floor per month (what the stack costs with nothing happening), the cost per
million steps at a model latency, for a stack whose database pauses the cost of waking it
(per spell of activity, with the sweeper's schedule and a traffic profile as inputs), and the
steps' metrics, each line with its arithmetic. Prices are list prices of us-east-1 (PRICES,
below, dated): check your region's pricing pages. Each line names the resource types it
prices; `tests/infra/test_cost.py` fails on a type of any shape's template that no line
prices and that is not free of its own, so a new resource cannot go uncounted, and on
docs/deploy.md's figures differing from what this prints.
"""

from __future__ import annotations

import argparse
import json
import math
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
    "sqs_standard_million": 0.40,  # SQS standard, per million requests
    "aurora_gb_month": 0.10,  # Aurora Standard storage, per GB-month
    "s3_gb_month": 0.023,  # S3 Standard, per GB-month
    "http_api_million": 1.00,  # API Gateway HTTP API, per million requests
    "xray_million": 5.00,  # X-Ray traces recorded, per million (100,000 a month free)
    "snapstart_restore_gb": 0.0001398,  # SnapStart (Python), per GB restored
    "sfn_transition_thousand": 0.025,  # Step Functions standard, per thousand transitions
    "get_metric_data_thousand": 0.01,  # CloudWatch GetMetricData, per thousand metrics
}
# Lambda polls a mapped queue with five long polls of 20 s at once while it is empty
# (Lambda's SQS event source: "starts with five parallel long-polling connections").
IDLE_POLLERS, LONG_POLL_SECONDS = 5, 20


@dataclass(frozen=True)
class Profile:
    """What the stack holds and does, where the bill depends on it (command-line inputs)."""

    db_gb: float = 1.0  # Aurora's storage
    documents_gb: float = 1.0  # files' originals (and the access logs) in S3
    flow_log_gb: float = 0.2  # VPC flow logs a month while idle (the NATs' own traffic)
    bursts_per_day: float = 10.0  # isolated spells of activity (a paused database wakes)
    approvals_per_step: float = 0.01  # approval waits and sleeptime fan-outs, per step
    cold_start_per_step: float = 0.001  # SnapStart restores, per step
    provider_keys: int = 0  # organizations' own provider keys (a secret each; none left alone)
    kept_kb_per_step: float = 6.0  # what a step leaves in Aurora (messages, versions, rows)


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
    "AWS::EC2::VPCEndpoint",  # a gateway endpoint (interface ones are told apart above)
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
    # Within Lambda's own charges (no price of their own): a function URL, a layer's storage.
    "AWS::Lambda::Url",
    "AWS::Lambda::LayerVersion",
}
# Aurora pauses an instance this long after its last connection closed (SecondsUntilAutoPause),
# and a function's idle session closes after CAIRN_DB_IDLE_SESSION_SECONDS: each wake-up of a
# paused cluster keeps it running, at its 0.5 ACU floor, for about their sum.


@dataclass(frozen=True)
class Line:
    part: str
    arithmetic: str
    dollars: float
    kinds: tuple[str, ...] = ()  # the resource types whose bill this line is (or part of)
    # From an input that is a guess (a Profile field, a measured-once size), not from the
    # template: the report says so.
    estimate: bool = False


def sections(
    template: dict[str, Any],
    latency: float = 2.0,
    organizations: int = 10,
    profile: Profile | None = None,
) -> list[tuple[str, list[Line]]]:
    """Every table the report prints, titled."""
    profile = profile or Profile()
    return [
        ("Idle floor, per month", idle_floor(template, profile)),
        (
            f"Per million steps, model latency {latency:g} s",
            per_million_steps(template, latency, profile),
        ),
        (
            f"Waking the paused database, a month of {profile.bursts_per_day:g} spells of "
            "activity a day",
            wakes_per_month(template, profile),
        ),
        (
            f"Metrics in a month with steps, {organizations} organizations active",
            metrics_per_month(template, organizations),
        ),
    ]


def unpriced(template: dict[str, Any]) -> set[str]:
    """Resource types of the template no line prices and not free of their own (a test
    keeps this empty). A gateway endpoint (S3's) is free; an interface one is not."""
    types = {
        "AWS::EC2::VPCEndpoint (interface)"
        if r["Type"] == "AWS::EC2::VPCEndpoint"
        and r.get("Properties", {}).get("VpcEndpointType") != "Gateway"
        else r["Type"]
        for r in template["Resources"].values()
    }
    priced = {k for _, lines in sections(template) for line in lines for k in line.kinds}
    return types - priced - FREE


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


def idle_floor(template: dict[str, Any], profile: Profile | None = None) -> list[Line]:
    """What the stack costs a month with nothing happening, part by part."""
    p, lines, profile = PRICES, [], profile or Profile()
    vpc = ("AWS::EC2::NatGateway", "AWS::EC2::EIP")
    if nats := len(_of(template, "AWS::EC2::NatGateway")):
        lines.append(
            Line(
                "NAT gateways",
                f"{nats} x ${p['nat_hour']}/h x {HOURS} h",
                nats * p["nat_hour"] * HOURS,
                vpc,
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
                ("AWS::EC2::Instance",),
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
                vpc,
            )
        )
    database = ("AWS::RDS::DBCluster", "AWS::RDS::DBInstance")
    (cluster,) = _of(template, "AWS::RDS::DBCluster")
    scaling = cluster["ServerlessV2ScalingConfiguration"]
    low, instances = float(scaling["MinCapacity"]), len(_of(template, "AWS::RDS::DBInstance"))
    proxied = bool(_of(template, "AWS::RDS::DBProxy"))
    # Auto-pause and RDS Proxy do not go together (the proxy holds connections to the
    # cluster): behind a proxy a 0 ACU minimum is billed as the 0.5 it runs at (synth
    # refuses that pairing now; kept for a template made otherwise).
    held = max(low, 0.5) if proxied else low
    if held == 0:
        lines.append(_paused(template, instances, int(scaling["SecondsUntilAutoPause"])))
    else:
        lines.append(
            Line(
                "Aurora Serverless v2",
                f"{instances} instances x {held:g} ACU x ${p['acu_hour']}/ACU-h x {HOURS} h",
                instances * held * p["acu_hour"] * HOURS,
                database,
            )
        )
    lines.append(
        Line(
            "Aurora storage",
            f"{profile.db_gb:g} GB x ${p['aurora_gb_month']}",
            profile.db_gb * p["aurora_gb_month"],
            database,
            estimate=True,
        )
    )
    if proxied:
        acus = max(p["proxy_min_acus"], held * instances)
        lines.append(
            Line(
                "RDS Proxy",
                f"at least {acus:g} ACUs x ${p['proxy_acu_hour']}/ACU-h x {HOURS} h",
                acus * p["proxy_acu_hour"] * HOURS,
                ("AWS::RDS::DBProxy",),
            )
        )
    secrets = len(_of(template, "AWS::SecretsManager::Secret"))
    lines.append(
        Line(
            "Secrets Manager",
            f"{secrets} secrets x ${p['secret_month']}",
            secrets * p["secret_month"],
            ("AWS::SecretsManager::Secret",),
        )
    )
    lines.append(
        Line(
            "organizations' own provider keys (a secret each, made at run time)",
            f"{profile.provider_keys} secrets (--provider-keys) x ${p['secret_month']}",
            profile.provider_keys * p["secret_month"],
            estimate=True,
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
            ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard", "AWS::SNS::Topic"),
        )
    )
    lines.extend(_pollers(template))
    lines.append(
        Line(
            "logs while idle (the sweeper's, VPC flow logs)",
            f"({_sweeps(template):,.0f} sweeps x 2 KB + {profile.flow_log_gb:g} GB of flow "
            f"logs) x ${p['logs_gb']}/GB",
            (_sweeps(template) * 2e-6 + profile.flow_log_gb) * p["logs_gb"],
            ("AWS::Logs::LogGroup", "AWS::EC2::FlowLog"),
            estimate=True,
        )
    )
    lines.append(
        Line(
            "S3 (files' originals, access logs)",
            f"{profile.documents_gb:g} GB x ${p['s3_gb_month']}",
            profile.documents_gb * p["s3_gb_month"],
            ("AWS::S3::Bucket",),
            estimate=True,
        )
    )
    if _of(template, "AWS::Scheduler::ScheduleGroup"):
        lines.append(
            Line(
                "EventBridge Scheduler (scheduled messages)",
                "14 million invocations a month free, then $1/M",
                0.0,
                ("AWS::Scheduler::ScheduleGroup",),
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
                ("AWS::ECS::Service",),
            )
        )
    insights = [
        c
        for c in _of(template, "AWS::ECS::Cluster")
        if {"Name": "containerInsights", "Value": "enabled"} in c.get("ClusterSettings", [])
    ]
    if insights:
        # Container Insights publishes its figures as custom metrics, billed a month each:
        # about ten for the cluster, and as many again for each service and task family.
        metrics = 8 + 11 * 2
        lines.append(
            Line(
                "Container Insights on the proxy's cluster",
                f"~{metrics} custom metrics x ${p['custom_metric_month']}",
                metrics * p["custom_metric_month"],
                estimate=True,
            )
        )
    if zones := len(_of(template, "AWS::ServiceDiscovery::PrivateDnsNamespace")):
        lines.append(
            Line(
                "its private DNS zone",
                f"{zones} x ${p['hosted_zone_month']}",
                zones * p["hosted_zone_month"],
                ("AWS::ServiceDiscovery::PrivateDnsNamespace",),
            )
        )
    lines.extend(_sweeper(template))
    lines.extend(_snapstart(template))
    return lines


def _pauses(template: dict[str, Any]) -> bool:
    (cluster,) = _of(template, "AWS::RDS::DBCluster")
    low = float(cluster["ServerlessV2ScalingConfiguration"]["MinCapacity"])
    return low == 0 and not _of(template, "AWS::RDS::DBProxy")


def _sweeper_env(template: dict[str, Any]) -> dict[str, Any]:
    return dict(_function(template, "sweeper").get("Environment", {}).get("Variables", {}))


def _skips_when_idle(template: dict[str, Any]) -> bool:
    """The sweeper skips its rounds while no function runs (the small shape)."""
    return "CAIRN_SWEEP_ACTIVITY_FUNCTIONS" in _sweeper_env(template)


def _awake_after(template: dict[str, Any]) -> tuple[int, int]:
    """Seconds a paused cluster stays up after a wake: Aurora's wait before pausing, and the
    functions' idle sessions that must close first."""
    (cluster,) = _of(template, "AWS::RDS::DBCluster")
    pause_after = int(cluster["ServerlessV2ScalingConfiguration"].get("SecondsUntilAutoPause", 300))
    idle = int(_sweeper_env(template).get("CAIRN_DB_IDLE_SESSION_SECONDS", 0))
    return pause_after, idle


def _paused(template: dict[str, Any], instances: int, pause_after: int) -> Line:
    """A cluster that pauses costs nothing asleep; the sweeper wakes it on its schedule,
    unless it skips its rounds while nothing runs."""
    kinds = ("AWS::RDS::DBCluster", "AWS::RDS::DBInstance")
    if _skips_when_idle(template):
        return Line(
            "Aurora Serverless v2, paused (the sweeper skips its rounds while nothing runs)",
            "0 wakes while idle: waking is priced per spell of activity, below",
            0.0,
            kinds,
        )
    _, idle = _awake_after(template)
    wakes = _sweeps(template)
    awake = pause_after + idle
    return Line(
        "Aurora Serverless v2, paused but for the sweeper's wake-ups",
        f"{wakes:,.0f} wakes x ({pause_after} s to pause + {idle} s idle session) x "
        f"{instances} x 0.5 ACU x ${PRICES['acu_hour']}/ACU-h",
        wakes * awake / 3600 * instances * 0.5 * PRICES["acu_hour"],
        kinds,
    )


def _sweeps(template: dict[str, Any]) -> float:
    """The sweeper's runs a month, from its schedule."""
    return HOURS * 60 / _sweep_minutes(template)


def _sweep_minutes(template: dict[str, Any]) -> int:
    for rule in _of(template, "AWS::Events::Rule"):
        expression = rule.get("ScheduleExpression", "")
        if found := re.fullmatch(r"rate\((\d+) (minute|hour|day)s?\)", expression):
            return int(found.group(1)) * {"minute": 1, "hour": 60, "day": 1440}[found.group(2)]
    raise ValueError("no sweeper schedule in the template")


def _sweeper(template: dict[str, Any]) -> Iterator[Line]:
    runs = _sweeps(template)
    gb = _function(template, "sweeper").get("MemorySize", 128) / 1024
    # ~0.3 s a sweep with nothing to do (bench: the sweeper's rounds on an idle stack).
    yield Line(
        "sweeper",
        f"{runs:,.0f} runs x 0.3 s x {gb:g} GB",
        runs * 0.3 * gb * PRICES["lambda_gb_second"],
        ("AWS::Lambda::Function", "AWS::Events::Rule"),
    )
    if _skips_when_idle(template):
        named = _sweeper_env(template)["CAIRN_SWEEP_ACTIVITY_FUNCTIONS"]
        # The functions' names, joined at deploy: a reference each (or plain text).
        asked = (
            json.dumps(named).count('"Ref"') if isinstance(named, dict) else len(named.split(","))
        )
        yield Line(
            "its question whether anything ran (CloudWatch GetMetricData)",
            f"{runs:,.0f} runs x {asked} metrics x ${PRICES['get_metric_data_thousand']}/1000",
            runs * asked * PRICES["get_metric_data_thousand"] / 1000,
        )


def _pollers(template: dict[str, Any]) -> Iterator[Line]:
    """Lambda's pollers of each mapped queue ask even when it is empty."""
    queues = {
        name: r["Properties"]
        for name, r in template["Resources"].items()
        if r["Type"] == "AWS::SQS::Queue"
    }
    fifo = standard = 0
    for mapping in _of(template, "AWS::Lambda::EventSourceMapping"):
        source = mapping.get("EventSourceArn", {})
        name = source.get("Fn::GetAtt", [None])[0] if isinstance(source, dict) else None
        if name in queues:
            if queues[name].get("FifoQueue"):
                fifo += 1
            else:
                standard += 1
    polls = IDLE_POLLERS * HOURS * 3600 / LONG_POLL_SECONDS / 1e6  # millions a queue
    if fifo or standard:
        yield Line(
            "SQS: Lambda's pollers on the mapped queues",
            f"({fifo} FIFO x ${PRICES['sqs_fifo_million']} + {standard} standard x "
            f"${PRICES['sqs_standard_million']}) x {IDLE_POLLERS} polls/{LONG_POLL_SECONDS} s "
            f"({polls:.2f} M a queue)",
            polls * (fifo * PRICES["sqs_fifo_million"] + standard * PRICES["sqs_standard_million"]),
            ("AWS::SQS::Queue", "AWS::Lambda::EventSourceMapping"),
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
            ("AWS::Lambda::Version",),
        )


def per_million_steps(
    template: dict[str, Any], latency: float, profile: Profile | None = None
) -> list[Line]:
    """A million steps, the model's tokens excluded; a step waits `latency` s for it."""
    p, profile = PRICES, profile or Profile()
    gb = _function(template, "step").get("MemorySize", 1024) / 1024
    api_gb = _function(template, "api").get("MemorySize", 1024) / 1024
    step_s = latency + 0.1
    traced = sum(
        1
        for f in _of(template, "AWS::Lambda::Function")
        if f.get("TracingConfig", {}).get("Mode") == "Active"
    )
    lines = [
        Line(
            "step function",
            f"1e6 x {step_s:g} s x {gb:g} GB x ${p['lambda_gb_second']} + requests",
            1e6 * step_s * gb * p["lambda_gb_second"] + p["lambda_requests_million"],
            ("AWS::Lambda::Function", "AWS::Lambda::Alias"),
        ),
        Line(
            "SQS FIFO",
            f"3 requests a step x ${p['sqs_fifo_million']}/M",
            3 * p["sqs_fifo_million"],
            ("AWS::SQS::Queue",),
        ),
        Line(
            "api function (the send's own invocation, when a step is a send's)",
            f"at most an invocation a step: 1e6 x 0.05 s x {api_gb:g} GB x "
            f"${p['lambda_gb_second']} + requests",
            1e6 * 0.05 * api_gb * p["lambda_gb_second"] + p["lambda_requests_million"],
            estimate=True,
        ),
        Line(
            "API Gateway (HTTP API)",
            f"at most a request a step (a turn's steps are one request) x "
            f"${p['http_api_million']}/M",
            p["http_api_million"],
            ("AWS::ApiGatewayV2::Api",),
        ),
        Line(
            "Aurora I/O",
            f"~20 I/Os a step x ${p['aurora_io_million']}/M",
            20 * p["aurora_io_million"],
            ("AWS::RDS::DBCluster",),
            estimate=True,
        ),
        Line(
            "Aurora storage the steps leave (a month's, while kept)",
            f"1e6 x ~{profile.kept_kb_per_step:g} KB x ${p['aurora_gb_month']}/GB-month",
            1e6 * profile.kept_kb_per_step * 1e-6 * p["aurora_gb_month"],
            ("AWS::RDS::DBCluster",),
            estimate=True,
        ),
        Line(
            "message embeddings",
            "at most a job per step: 0.2 s x 1 GB + its invocation + 3 SQS requests",
            1e6 * 0.2 * p["lambda_gb_second"]
            + p["lambda_requests_million"]
            + 3 * p["sqs_fifo_million"],
            estimate=True,
        ),
        Line(
            "approval waits and sleeptime fan-outs (Step Functions)",
            f"{profile.approvals_per_step:g} a step x 5 transitions x "
            f"${p['sfn_transition_thousand']}/1000",
            1e6 * profile.approvals_per_step * 5 * p["sfn_transition_thousand"] / 1000,
            ("AWS::StepFunctions::StateMachine",),
            estimate=True,
        ),
        Line(
            f"X-Ray ({traced} functions trace)",
            f"at most 3 traces a step (the send's api invocation, the step, its embedding "
            f"job) x ${p['xray_million']}/M (100,000 a month free, not taken off)",
            3 * p["xray_million"] if traced else 0.0,
        ),
        Line(
            "CloudWatch Logs",
            f"~1 KB a step x ${p['logs_gb']}/GB",
            1e6 * 1e-6 * p["logs_gb"],
            ("AWS::Logs::LogGroup",),
            estimate=True,
        ),
        Line(
            "steps' metrics (two EMF log lines)",
            f"~0.8 KB a step x ${p['logs_gb']}/GB",
            1e6 * 0.8e-6 * p["logs_gb"],
            estimate=True,
        ),
    ]
    if any(
        f.get("SnapStart", {}).get("ApplyOn") == "PublishedVersions"
        for f in _of(template, "AWS::Lambda::Function")
    ):
        lines.append(
            Line(
                "SnapStart restores",
                f"{profile.cold_start_per_step:g} a step x {gb:g} GB x "
                f"${p['snapstart_restore_gb']}/GB",
                1e6 * profile.cold_start_per_step * gb * p["snapstart_restore_gb"],
                ("AWS::Lambda::Version",),
                estimate=True,
            )
        )
    if _pauses(template):  # a cluster that pauses is billed while steps keep it awake
        lines.append(
            Line(
                "Aurora awake for the steps (at most: one step at a time)",
                f"1e6 x {step_s:g} s x 0.5 ACU x ${p['acu_hour']}/ACU-h",
                1e6 * step_s / 3600 * 0.5 * p["acu_hour"],
                ("AWS::RDS::DBCluster",),
            )
        )
    if _of(template, "AWS::EC2::NatGateway"):  # a NAT instance charges no processing
        lines.append(
            Line(
                "NAT data to the provider",
                f"~30 KB a step x ${p['nat_gb']}/GB",
                1e6 * 30e-6 * p["nat_gb"],
                ("AWS::EC2::NatGateway",),
                estimate=True,
            )
        )
    return lines


def wakes_per_month(template: dict[str, Any], profile: Profile | None = None) -> list[Line]:
    """A cluster that pauses, woken by activity: each isolated spell keeps it up until it
    may pause again, and the sweeper's rounds that follow (while its window of activity
    lasts) each wake it once more. Nothing for a cluster that never pauses."""
    if not _pauses(template):
        return []
    profile = profile or Profile()
    pause_after, idle = _awake_after(template)
    awake = pause_after + idle
    sweep = _sweep_minutes(template) * 60
    env = _sweeper_env(template)
    window = float(env.get("CAIRN_SWEEP_ACTIVITY_SECONDS", 0))
    # Rounds after a spell, each a wake of its own when they are further apart than a wake
    # lasts; with no window the sweeper wakes it every round anyway (in the idle floor).
    rounds = math.ceil(window / sweep) if window else 0
    spells = profile.bursts_per_day * HOURS / 24
    rate = 0.5 * PRICES["acu_hour"] / 3600
    return [
        Line(
            "Aurora awake after each spell",
            f"{spells:,.0f} spells x ({pause_after} s to pause + {idle} s idle session) x "
            f"0.5 ACU x ${PRICES['acu_hour']}/ACU-h",
            spells * awake * rate,
            ("AWS::RDS::DBCluster",),
        ),
        Line(
            "the sweeper's rounds after each spell",
            f"{spells:,.0f} spells x {rounds} rounds (a {window:,.0f} s window, every "
            f"{sweep} s) x {awake} s awake",
            spells * rounds * awake * rate if sweep > awake else 0.0,
            ("AWS::RDS::DBCluster",),
        ),
    ]


def metrics_per_month(template: dict[str, Any], organizations: int) -> list[Line]:
    """The steps' custom metrics (CAIRN_METRICS=emf), each for the stack and again for each
    organization with steps that month. None in a month without steps (nothing is
    published). At most: AWS prorates a custom metric by the hours it is published in, so a
    month whose steps come in some hours only costs less."""
    environment = _function(template, "step").get("Environment", {}).get("Variables", {})
    if environment.get("CAIRN_METRICS") != "emf":
        return []
    sys.path.insert(0, str(ROOT / "layers" / "runtime" / "python"))
    from cairn.adapters.aws.metrics import METRICS, PER_ORGANIZATION

    n, each, price = len(METRICS), len(PER_ORGANIZATION), PRICES["custom_metric_month"]
    return [
        Line("the stack's (at most: published every hour)", f"{n} metrics x ${price}", n * price),
        Line(
            "each organization's (at most: published every hour)",
            f"{organizations} organizations x {each} metrics x ${price}",
            organizations * each * price,
            estimate=True,
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


def report(
    template: dict[str, Any],
    latency: float = 2.0,
    organizations: int = 10,
    profile: Profile | None = None,
) -> str:
    out = []
    for title, lines in sections(template, latency, organizations, profile):
        if not lines:
            continue
        out.append(f"{title}:\n")
        out.append("| part | arithmetic | $ |\n| --- | --- | --- |")
        out += [
            f"| {x.part}{' (estimate)' if x.estimate else ''} | {x.arithmetic} | {x.dollars:,.2f} |"
            for x in lines
        ]
        out.append(f"| **total** | | **{sum(x.dollars for x in lines):,.2f}** |\n")
    if missing := unpriced(template):
        out.append(f"Not priced: {', '.join(sorted(missing))}")
    return "\n".join(out).rstrip() + "\n"


# docs/deploy.md's figures, each between markers naming the shape's flags.
DOCS = ROOT / "docs" / "deploy.md"
DOCUMENTED = {"production": {}, "dev": {"dev": "true"}, "small": {"size": "small"}}
BLOCK = re.compile(r"(<!-- cost:(\w+) -->\n)(.*?)(<!-- /cost -->)", re.S)


def documented(text: str) -> dict[str, str]:
    """The figures docs/deploy.md shows, by shape."""
    return {m.group(2): m.group(3) for m in BLOCK.finditer(text)}


def with_figures(text: str, reports: dict[str, str]) -> str:
    return BLOCK.sub(lambda m: m.group(1) + "\n" + reports[m.group(2)] + "\n" + m.group(4), text)


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
    parser.add_argument(
        "--bursts-per-day",
        type=float,
        default=Profile.bursts_per_day,
        help="isolated spells of activity a day (each wakes a paused database)",
    )
    parser.add_argument("--db-gb", type=float, default=Profile.db_gb, help="Aurora's storage")
    parser.add_argument(
        "--provider-keys",
        type=int,
        default=Profile.provider_keys,
        help="organizations' own provider keys (a Secrets Manager secret each)",
    )
    parser.add_argument(
        "--write-docs", action="store_true", help="write docs/deploy.md's figures (defaults)"
    )
    args = parser.parse_args(argv)
    if args.write_docs:
        reports = {name: report(synthesised(flags)) for name, flags in DOCUMENTED.items()}
        DOCS.write_text(with_figures(DOCS.read_text(), reports))
        print(f"{DOCS}: {', '.join(reports)}")
        return 0
    context = dict(c.split("=", 1) for c in args.context)
    profile = Profile(
        bursts_per_day=args.bursts_per_day, db_gb=args.db_gb, provider_keys=args.provider_keys
    )
    print(report(synthesised(context), args.latency, args.organizations, profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
