"""The CDK app, synthesised offline (the dependency layer's build skipped): every part of
the deployment, its wiring, least privilege, and the cdk-nag AwsSolutions checks."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk.assertions import Match, Template

from cairn.adapters.local.stepfunctions import definitions, function_arn, state_machine_definitions
from cairn_infra.app import build_app, project_context
from cairn_infra.packaging import ROOT
from cairn_infra.shape import Shape
from cairn_infra.stack import CairnStack
from cairn_infra.workflows import WorkflowTimings

TIMINGS = WorkflowTimings(approval_timeout=3, sleeptime_run_timeout=30, retry_interval=1)
# The only actions IAM allows on no resource but "*" (tests the cdk-nag IAM5 acknowledgment).
STAR_ONLY = {
    *("xray:PutTraceSegments", "xray:PutTelemetryRecords"),
    *("xray:GetSamplingRules", "xray:GetSamplingTargets"),
    *("logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery"),
    *("logs:DeleteLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy"),
    *("logs:DescribeResourcePolicies", "logs:DescribeLogGroups"),
    "cloudwatch:GetMetricData",  # the small shape's sweeper (is anything running?)
}


def synth(**context: Any) -> tuple[CairnStack, Template]:
    app = cdk.App(context={**project_context(), "skip_bundling": "true", **context})
    stack = CairnStack(
        app,
        context.get("stack_name", "Cairn"),
        skip_bundling=True,
        timings=TIMINGS,
        shape=Shape.from_context(context.get),
    )
    return stack, Template.from_stack(stack)


@pytest.fixture(scope="module")
def prod() -> Iterator[tuple[CairnStack, Template]]:
    yield synth()


@pytest.fixture(scope="module")
def template(prod: tuple[CairnStack, Template]) -> dict[str, Any]:
    return prod[1].to_json()


def resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def as_list(value: str | list[str]) -> list[str]:
    return value if isinstance(value, list) else [value]


def logical_id(template: dict[str, Any], kind: str, prefix: str) -> str:
    """The one resource of a kind whose id is the prefix and CDK's 8-character hash."""
    (found,) = [k for k in resources(template, kind) if re.fullmatch(f"{prefix}[0-9A-F]{{8}}", k)]
    return found


def function(template: dict[str, Any], key: str) -> dict[str, Any]:
    name = logical_id(template, "AWS::Lambda::Function", f"Functions{key.replace('-', '')}")
    return template["Resources"][name]


# Every shape docs/deploy.md names, alone and combined where it allows.
SHAPES = {
    "production": {},
    "dev": {"dev": "true"},
    "tool_network": {"tool_network": "true"},
    "dev+tool_network": {"dev": "true", "tool_network": "true"},
    "stream_concurrency": {"stream_concurrency": "20"},
    "bedrock_models": {"bedrock_models": "anthropic.claude-x-v1:0,us.anthropic.claude-y-v1:0"},
    "dev+everything": {
        "dev": "true",
        "tool_network": "true",
        "stream_concurrency": "5",
        "bedrock_models": "us.anthropic.claude-y-v1:0",
        "sweep_minutes": "5",
        "api_rate_limit": "20",
        "stack_name": "CairnDev",
    },
    "small": {"size": "small"},
    "small+dev+tool_network": {"size": "small", "dev": "true", "tool_network": "true"},
    "small+dashboard+single_tenant+otel_endpoint": {
        "size": "small",
        "dashboard": "true",
        "single_tenant": "true",
        "otel_endpoint": "https://otel.example.com:4318/",
    },
}


@pytest.mark.parametrize("context", SHAPES.values(), ids=SHAPES.keys())
def test_cdk_nag_aws_solutions_pass_with_reasoned_acknowledgments(
    context: dict[str, str],
) -> None:
    app = cdk.App(context={**project_context(), "skip_bundling": "true", **context})
    stack = build_app(app)
    app.synth()  # raises ValidationFailed on any unacknowledged finding
    # And no shape pairs a cluster that pauses (MinCapacity 0) with RDS Proxy, which keeps
    # it from pausing (AWS documents the two as incompatible): only the small shape pauses.
    template = Template.from_stack(stack).to_json()
    (cluster,) = resources(template, "AWS::RDS::DBCluster").values()
    pauses = cluster["Properties"]["ServerlessV2ScalingConfiguration"]["MinCapacity"] == 0
    assert not (pauses and resources(template, "AWS::RDS::DBProxy"))
    assert pauses == (context.get("size") == "small")
    from cairn_infra.suppressions import DEV_REASONS, REASONS, SMALL_REASONS

    reasons = [*REASONS.values(), *DEV_REASONS.values(), *SMALL_REASONS.values()]
    assert all(len(reason) > 80 for reason in reasons)


def test_deletion_protection_is_off_only_in_the_dev_shape() -> None:
    for context, protected in (({}, True), ({"dev": "true"}, False)):
        _, t = synth(**context)
        t.has_resource_properties("AWS::RDS::DBCluster", {"DeletionProtection": protected})


def test_network_two_azs_isolated_database_subnets(template: dict[str, Any]) -> None:
    subnets = resources(template, "AWS::EC2::Subnet").values()
    kinds = [
        next(t["Value"] for t in s["Properties"]["Tags"] if t["Key"] == "aws-cdk:subnet-type")
        for s in subnets
    ]
    assert sorted(kinds) == ["Isolated"] * 2 + ["Private"] * 2 + ["Public"] * 2
    assert len(resources(template, "AWS::EC2::NatGateway")) == 2
    assert resources(template, "AWS::EC2::FlowLog")
    # S3 through a free gateway endpoint, routed from the functions' subnets only: the
    # isolated ones (the tool sandbox's) get no route to it
    (endpoint,) = [
        e["Properties"]
        for e in resources(template, "AWS::EC2::VPCEndpoint").values()
        if e["Properties"].get("VpcEndpointType") == "Gateway"
    ]
    assert "s3" in json.dumps(endpoint["ServiceName"])
    routed = {t["Ref"] for t in endpoint["RouteTableIds"]}
    tables = resources(template, "AWS::EC2::SubnetRouteTableAssociation").values()
    kind_of = {
        name: next(t["Value"] for t in s["Properties"]["Tags"] if t["Key"] == "aws-cdk:subnet-type")
        for name, s in resources(template, "AWS::EC2::Subnet").items()
    }
    private = {
        a["Properties"]["RouteTableId"]["Ref"]
        for a in tables
        if kind_of[a["Properties"]["SubnetId"]["Ref"]] == "Private"
    }
    assert routed == private and len(routed) == 2


def test_aurora_serverless_v2_with_pgvector_proxy_and_secret(
    prod: tuple[CairnStack, Template], template: dict[str, Any]
) -> None:
    t = prod[1]
    t.has_resource(
        "AWS::RDS::DBCluster",
        {
            "Properties": Match.object_like(
                {
                    "Engine": "aurora-postgresql",
                    "EngineVersion": Match.string_like_regexp(r"^17\."),
                    "StorageEncrypted": True,
                    "DeletionProtection": True,
                    "ServerlessV2ScalingConfiguration": Match.object_like({"MinCapacity": 0.5}),
                    "DBSubnetGroupName": Match.any_value(),
                }
            ),
            "DeletionPolicy": "Snapshot",
            "UpdateReplacePolicy": "Snapshot",
        },
    )
    assert len(resources(template, "AWS::RDS::DBInstance")) == 2  # writer + reader in AZ 2
    t.has_resource_properties(
        "AWS::RDS::DBProxy", {"RequireTLS": True, "EngineFamily": "POSTGRESQL"}
    )
    t.has_resource_properties("AWS::SecretsManager::RotationSchedule", Match.any_value())
    t.resource_count_is("AWS::SecretsManager::Secret", 4)  # admin, app role, provider keys, sealing


def test_migrations_run_on_deploy_through_the_migrate_function(template: dict[str, Any]) -> None:
    (migrations,) = resources(template, "AWS::CloudFormation::CustomResource").values()
    assert len(migrations["Properties"]["migrations"]) == 64  # changes with any .sql file
    framework_id = migrations["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
    framework = template["Resources"][framework_id]["Properties"]["Environment"]["Variables"]
    migrate = logical_id(template, "AWS::Lambda::Function", "Functionsmigrate")
    assert framework["USER_ON_EVENT_FUNCTION_ARN"] == {"Fn::GetAtt": [migrate, "Arn"]}


def test_functions_layers_and_snapstart(template: dict[str, Any]) -> None:
    assert len(resources(template, "AWS::Lambda::LayerVersion")) == 2
    for key in (
        "api",
        "stream",
        "step",
        "step-dead-letter",
        "approval",
        "sleeptime",
        "sweeper",
        "migrate",
    ):
        props = function(template, key)["Properties"]
        assert props["Runtime"] == "python3.12" and props["Architectures"] == ["arm64"]
        assert len(props["Layers"]) == 2 and "VpcConfig" in props
        env = props["Environment"]["Variables"]
        assert "CAIRN_DB_SECRET_ARN" not in env and env["CAIRN_DB_IAM_USER"] in (
            "cairn_app",
            "cairn_admin",
        )
        assert env["PYDANTIC_DISABLE_PLUGINS"] == "__all__"  # no entry-point scan on a cold start
    for key in ("api", "step"):
        assert function(template, key)["Properties"]["SnapStart"] == {
            "ApplyOn": "PublishedVersions"
        }
    assert function(template, "step-dead-letter")["Properties"]["Handler"] == (
        "handler.dead_letter_handler"
    )


def test_the_sandbox_has_no_network_no_secrets_and_a_short_timeout(
    template: dict[str, Any],
) -> None:
    props = function(template, "sandbox")["Properties"]
    # No way out: isolated subnets (no NAT route) and a security group without rules.
    subnets = props["VpcConfig"]["SubnetIds"]
    isolated = {
        name
        for name, sub in resources(template, "AWS::EC2::Subnet").items()
        if {"Key": "aws-cdk:subnet-type", "Value": "Isolated"} in sub["Properties"]["Tags"]
    }
    assert subnets and {s["Ref"] for s in subnets} <= isolated
    (group,) = props["VpcConfig"]["SecurityGroupIds"]
    sg = resources(template, "AWS::EC2::SecurityGroup")[group["Fn::GetAtt"][0]]["Properties"]
    assert sg["SecurityGroupEgress"] == [  # CDK's rule that matches no traffic
        {
            "CidrIp": "255.255.255.255/32",
            "Description": "Disallow all traffic",
            "FromPort": 252,
            "IpProtocol": "icmp",
            "ToPort": 86,
        }
    ]
    assert "SecurityGroupIngress" not in sg
    ingress = resources(template, "AWS::EC2::SecurityGroupIngress").values()
    assert not any(r["Properties"].get("SourceSecurityGroupId") == group for r in ingress)
    assert len(props["Layers"]) == 2  # what its handler imports (test_packaging)
    # A stdio MCP server's use (30 s by default) and the 5 s to stop it and answer.
    assert props["Timeout"] == 40
    assert not any(k.startswith("CAIRN_DB") for k in props["Environment"]["Variables"])
    role = props["Role"]["Fn::GetAtt"][0]
    policies = [
        p
        for p in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
    ]
    statements = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
    actions = {a for s in statements for a in as_list(s["Action"])}
    # X-Ray, and the VPC's network interfaces (from the managed policy or inline).
    assert actions <= {"xray:PutTraceSegments", "xray:PutTelemetryRecords"} | {
        "ec2:CreateNetworkInterface",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DeleteNetworkInterface",
        "ec2:AssignPrivateIpAddresses",
        "ec2:UnassignPrivateIpAddresses",
    }


def test_iam_has_no_wildcards_on_data_resources(template: dict[str, Any]) -> None:
    for name, policy in resources(template, "AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = as_list(statement["Action"])
            assert not any(a == "*" or a.endswith(":*") for a in actions), (name, actions)
            if statement["Resource"] == "*":
                assert set(actions) <= STAR_ONLY, (name, actions)


def test_files_originals_in_a_private_bucket_and_jobs_on_their_own_queue(
    template: dict[str, Any],
) -> None:
    """The originals' bucket: encrypted, no public access, TLS only, versioned with old
    versions expiring, access logged; the files function runs their jobs from a queue of
    their own, reads the originals, and only the API functions write or delete them."""
    buckets = resources(template, "AWS::S3::Bucket")
    originals_id = logical_id(template, "AWS::S3::Bucket", "DocumentsOriginals")
    originals = buckets[originals_id]["Properties"]
    assert (
        originals["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
            "ServerSideEncryptionByDefault"
        ]["SSEAlgorithm"]
        == "AES256"
    )
    assert originals["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert originals["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = originals["LifecycleConfiguration"]["Rules"]
    assert rule["NoncurrentVersionExpiration"]["NoncurrentDays"] == 30
    assert originals["LoggingConfiguration"]["DestinationBucketName"] == {
        "Ref": logical_id(template, "AWS::S3::Bucket", "DocumentsAccessLogs")
    }
    policies = resources(template, "AWS::S3::BucketPolicy").values()
    tls_only = [p for p in policies if p["Properties"]["Bucket"] == {"Ref": originals_id}]
    assert any(
        st["Effect"] == "Deny" and st["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for p in tls_only
        for st in p["Properties"]["PolicyDocument"]["Statement"]
    )
    files_fn = function(template, "files")
    variables = files_fn["Properties"]["Environment"]["Variables"]
    assert variables["CAIRN_DOCUMENTS_BUCKET"] == {"Ref": originals_id}
    assert files_fn["Properties"]["Timeout"] == 900
    files_queue = logical_id(template, "AWS::SQS::Queue", "FilesQueueFiles")
    assert variables["CAIRN_FILES_QUEUE_URL"] == {"Ref": files_queue}
    mappings = resources(template, "AWS::Lambda::EventSourceMapping").values()
    (files_mapping,) = [
        m["Properties"]
        for m in mappings
        if m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0] == files_queue
    ]
    assert files_mapping["FunctionName"] == {
        "Ref": logical_id(template, "AWS::Lambda::Function", "Functionsfiles")
    }
    object_actions: dict[str, set[str]] = {}
    for policy in resources(template, "AWS::IAM::Policy").values():
        for st in policy["Properties"]["PolicyDocument"]["Statement"]:
            if any(str(a).startswith("s3:") for a in as_list(st["Action"])):
                role = policy["Properties"]["Roles"][0]["Ref"]
                object_actions.setdefault(role, set()).update(as_list(st["Action"]))
    assert sorted(object_actions.values(), key=len) == [
        {"s3:GetObject"},
        {"s3:PutObject", "s3:DeleteObject"},
        {"s3:PutObject", "s3:DeleteObject"},
    ]  # the files function reads; api and stream write and delete; no one else


def test_fifo_queue_dlq_partial_failures_and_alarm(template: dict[str, Any]) -> None:
    queues = resources(template, "AWS::SQS::Queue")
    steps = queues[logical_id(template, "AWS::SQS::Queue", "StepQueueSteps")]["Properties"]
    dlq_id = logical_id(template, "AWS::SQS::Queue", "StepQueueDeadLetters")
    assert steps["FifoQueue"] is True and queues[dlq_id]["Properties"]["FifoQueue"] is True
    assert steps["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
        "maxReceiveCount": 5,
    }
    mappings = list(resources(template, "AWS::Lambda::EventSourceMapping").values())
    assert len(mappings) == 6  # steps, embedding jobs, files' jobs, and their dead letters
    assert all(
        m["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"] for m in mappings
    )
    # Embedding jobs: a queue of their own (never in an agent's step group, where its next
    # turn would wait behind them), run by the step function with its own ceiling.
    embeds_id = logical_id(template, "AWS::SQS::Queue", "EmbedQueueEmbeddings")
    embed_dlq_id = logical_id(template, "AWS::SQS::Queue", "EmbedQueueDeadLetters")
    embeds = queues[embeds_id]["Properties"]
    assert embeds["FifoQueue"] is True and queues[embed_dlq_id]["Properties"]["FifoQueue"]
    assert embeds["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": [embed_dlq_id, "Arn"]}
    by_queue = {
        m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]: m["Properties"] for m in mappings
    }
    embed_mapping = by_queue[embeds_id]
    step_mapping = by_queue[logical_id(template, "AWS::SQS::Queue", "StepQueueSteps")]
    assert embed_mapping["FunctionName"] == step_mapping["FunctionName"]
    assert (
        embed_mapping["ScalingConfig"]["MaximumConcurrency"]
        < step_mapping["ScalingConfig"]["MaximumConcurrency"]
    )
    functions = resources(template, "AWS::Lambda::Function").values()
    publishing = [
        f
        for f in functions
        if "CAIRN_STEP_QUEUE_URL" in f["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert publishing and all(
        f["Properties"]["Environment"]["Variables"]["CAIRN_EMBED_QUEUE_URL"] == {"Ref": embeds_id}
        for f in publishing
    )
    alarms = resources(template, "AWS::CloudWatch::Alarm").values()
    dlq_alarms = [
        a
        for a in alarms
        if a["Properties"].get("MetricName") == "ApproximateNumberOfMessagesVisible"
    ]
    (dlq_alarm,) = dlq_alarms
    assert dlq_alarm["Properties"]["Dimensions"][0]["Value"] == {
        "Fn::GetAtt": [dlq_id, "QueueName"]
    }
    assert dlq_alarm["Properties"]["AlarmActions"]


def test_alarms_cover_errors_throttles_p99_and_database_capacity(template: dict[str, Any]) -> None:
    alarms = [a["Properties"] for a in resources(template, "AWS::CloudWatch::Alarm").values()]
    by_metric: dict[str, int] = {}
    for a in alarms:
        key = a.get("ExtendedStatistic") or a.get("MetricName")
        by_metric[key] = by_metric.get(key, 0) + 1
    assert by_metric["Errors"] == by_metric["Throttles"] == 10
    assert by_metric["p99"] == 10 + 1  # each function's tail, and the model's (below)
    # From the steps' own metrics (EMF), for the whole stack: a slow model, failing runs.
    own = {a["MetricName"]: a for a in alarms if a.get("Namespace") == "Cairn"}
    assert set(own) >= {"ModelLatency", "RunsFailed"}
    assert own["ModelLatency"]["Dimensions"] == [{"Name": "service", "Value": "cairn"}]
    assert own["ModelLatency"]["Threshold"] == 60_000
    assert by_metric["ServerlessDatabaseCapacity"] == 1
    assert by_metric["ApproximateAgeOfOldestMessage"] == 1
    assert by_metric["ExecutionsFailed"] == by_metric["ExecutionsTimedOut"] == 2
    assert any("Metrics" in a and "DatabaseConnections" in json.dumps(a) for a in alarms)
    # Quiet at normal load: the API's slow tail is measured against its 29 s cut, not the
    # 25 s a sync send may wait by design, and every tail must hold for 15 minutes.
    api = function(template, "api")["Properties"]["Timeout"] * 1000
    tails = {
        a["AlarmName"] if "AlarmName" in a else json.dumps(a["Dimensions"]): a
        for a in alarms
        if a.get("ExtendedStatistic") == "p99"
    }
    api_tail = [a for a in tails.values() if "FunctionsapiEF" in json.dumps(a["Dimensions"])]
    assert len(api_tail) == 1 and api_tail[0]["Threshold"] > 25_000 + 0.1 * (api - 25_000)
    assert all(a["EvaluationPeriods"] == 3 for a in tails.values())
    assert all(
        g["Properties"].get("RetentionInDays")
        for g in resources(template, "AWS::Logs::LogGroup").values()
    )


def test_http_api_sweeper_schedule_and_provider_secret(prod: tuple[CairnStack, Template]) -> None:
    t = prod[1]
    t.has_resource_properties("AWS::ApiGatewayV2::Api", {"ProtocolType": "HTTP"})
    t.has_resource_properties("AWS::ApiGatewayV2::Integration", {"PayloadFormatVersion": "2.0"})
    t.has_resource_properties("AWS::ApiGatewayV2::Stage", {"AccessLogSettings": Match.any_value()})
    t.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(1 minute)"})
    wanted = Match.object_like({"CAIRN_PROVIDER_SECRET_ARN": Match.any_value()})
    t.has_resource_properties("AWS::Lambda::Function", {"Environment": {"Variables": wanted}})


def test_streams_go_through_a_function_url_in_response_stream_mode(
    template: dict[str, Any],
) -> None:
    """The API's streaming twin: the same handler code behind a function URL that streams,
    its runtime loop started by the exec wrapper, with the API's grants and Lambda's
    longest timeout (the turn's steps run while the stream is open)."""
    stream = function(template, "stream")
    props = stream["Properties"]
    assert props["Timeout"] == 900 and props["Handler"] == "handler.handler"
    env = props["Environment"]["Variables"]
    assert env["AWS_LAMBDA_EXEC_WRAPPER"] == "/var/task/bootstrap"
    assert "SnapStart" not in props
    (url,) = resources(template, "AWS::Lambda::Url").values()
    name = logical_id(template, "AWS::Lambda::Function", "Functionsstream")
    assert url["Properties"] == {
        "AuthType": "NONE",
        "InvokeMode": "RESPONSE_STREAM",
        "TargetFunctionArn": {"Fn::GetAtt": [name, "Arn"]},
    }
    assert "StreamUrl" in template["Outputs"]
    # What it may do is what the buffered API may do: same statements on its role.
    api_role = function(template, "api")["Properties"]["Role"]["Fn::GetAtt"][0]
    stream_role = props["Role"]["Fn::GetAtt"][0]

    def actions(role: str) -> set[str]:
        return {
            action
            for policy in resources(template, "AWS::IAM::Policy").values()
            if {"Ref": role} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            for action in as_list(statement["Action"])
        }

    assert actions(stream_role) == actions(api_role) and "lambda:InvokeFunction" in actions(
        stream_role
    )
    executable = (ROOT / "functions" / "stream" / "bootstrap").stat().st_mode & 0o111
    assert executable == 0o111  # the zip keeps the mode Lambda needs to run the wrapper


def test_stream_concurrency_caps_the_stream_function_and_nothing_else(
    template: dict[str, Any],
) -> None:
    assert "ReservedConcurrentExecutions" not in function(template, "stream")["Properties"]
    app = cdk.App(
        context={**project_context(), "skip_bundling": "true", "stream_concurrency": "20"}
    )
    stack = build_app(app)
    app.synth()  # cdk-nag's checks pass with it
    capped = cdk.assertions.Template.from_stack(stack).to_json()
    reserved = {
        name: fn["Properties"]["ReservedConcurrentExecutions"]
        for name, fn in resources(capped, "AWS::Lambda::Function").items()
        if "ReservedConcurrentExecutions" in fn["Properties"]
    }
    assert reserved == {logical_id(capped, "AWS::Lambda::Function", "Functionsstream"): 20}
    with pytest.raises(ValueError, match="stream_concurrency"):
        build_app(
            cdk.App(
                context={**project_context(), "skip_bundling": "true", "stream_concurrency": "0"}
            )
        )


def test_the_deployed_state_machines_are_the_ones_the_workflow_tests_run(
    template: dict[str, Any],
) -> None:
    refs = {}
    for key in ("approval", "sleeptime"):
        refs[f"{logical_id(template, 'AWS::Lambda::Function', f'Functions{key}')}.Arn"] = (
            function_arn(key)
        )
    deployed = state_machine_definitions(template, refs)
    executed = definitions(
        approval_timeout_seconds=3, sleeptime_run_timeout_seconds=30, retry_seconds=1
    )
    by_kind = {k: json.loads(v) for k, v in deployed.items()}
    approval = next(v for k, v in by_kind.items() if k.startswith("Approval"))
    sleeptime = next(v for k, v in by_kind.items() if k.startswith("Sleeptime"))
    assert approval == json.loads(executed["approval"])
    assert sleeptime == json.loads(executed["sleeptime"])
    wait = approval["States"]["WaitForAnswer"]
    assert wait["Resource"].endswith(":states:::lambda:invoke.waitForTaskToken")
    assert wait["TimeoutSeconds"] == 3
    fan_out = sleeptime["States"]["EachSleeptimeAgent"]
    assert fan_out["Type"] == "Map"
    item = fan_out["ItemProcessor"]["States"]["RunSleeptimeAgent"]
    assert item["Resource"].endswith(":states:::lambda:invoke.waitForTaskToken")
    assert item["Catch"][0]["ErrorEquals"] == ["States.ALL"]


def test_dev_flag_relaxes_protection_only() -> None:
    _, t = synth(dev="true")
    t.has_resource(
        "AWS::RDS::DBCluster",
        {
            "Properties": Match.object_like({"DeletionProtection": False}),
            "DeletionPolicy": "Delete",
        },
    )
    t.resource_count_is("AWS::EC2::NatGateway", 1)
    t.resource_count_is("AWS::RDS::DBInstance", 1)
    # Production's connection path (the proxy), so its database does not pause (0.5 ACU),
    # and it sweeps as production does.
    t.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(1 minute)"})
    t.has_resource_properties(
        "AWS::RDS::DBCluster",
        Match.object_like(
            {"ServerlessV2ScalingConfiguration": Match.object_like({"MinCapacity": 0.5})}
        ),
    )
    t.resource_count_is("AWS::RDS::DBProxy", 1)


# Properties naming something that must be unique in an account and region.
UNIQUE_NAMES = {
    "FunctionName",
    "StateMachineName",
    "DBProxyName",
    "QueueName",
    "LogGroupName",
    "RoleName",
    "ClusterName",
    "TopicName",
    "DBClusterIdentifier",
    "DBInstanceIdentifier",
    "DashboardName",
    "AlarmName",
    "ServiceName",
    "Family",
}


def _unique_names(template: dict[str, Any]) -> dict[str, str]:
    return {
        f"{name}.{key}": value
        for name, resource in template["Resources"].items()
        for key, value in (resource.get("Properties") or {}).items()
        if key in UNIQUE_NAMES and isinstance(value, str)
    }


def test_a_second_stack_shares_no_physical_name_with_the_first(template: dict[str, Any]) -> None:
    """docs/deploy.md's `-c stack_name=...`: two stacks in one account and region."""
    _, second = synth(stack_name="CairnTwo", tool_network="true")
    _, first = synth(tool_network="true")
    ours, theirs = _unique_names(first.to_json()), _unique_names(second.to_json())
    assert "DBProxyName" in {k.split(".")[1] for k in ours}  # it is named, and...
    assert set(ours.values()) & set(theirs.values()) == set()  # ...never the same


def test_every_queue_outlasts_its_consumer_and_steps_come_one_at_a_time(
    template: dict[str, Any],
) -> None:
    queues = resources(template, "AWS::SQS::Queue")
    functions = resources(template, "AWS::Lambda::Function")
    mappings = resources(template, "AWS::Lambda::EventSourceMapping").values()
    assert len(mappings) == 6
    for mapping in mappings:
        props = mapping["Properties"]
        queue = queues[props["EventSourceArn"]["Fn::GetAtt"][0]]["Properties"]
        name = _consumer(template, props["FunctionName"])
        fn = functions[name]
        # Lambda refuses a mapping whose queue's visibility is below the function's timeout.
        assert queue["VisibilityTimeout"] >= 6 * fn["Properties"]["Timeout"], name
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    step = [m["Properties"] for m in mappings if "DeadLetters" not in str(m["Properties"])]
    assert sorted((m["BatchSize"], m["ScalingConfig"]["MaximumConcurrency"]) for m in step) == [
        (1, 4),
        (1, 5),
        (1, 50),
    ]  # files' jobs, embedding jobs, steps


def test_migrations_wait_for_the_database_behind_the_proxy(template: dict[str, Any]) -> None:
    (migrations,) = [
        r
        for r in resources(template, "AWS::CloudFormation::CustomResource").values()
        if "migrations" in r["Properties"]
    ]
    after = set(migrations.get("DependsOn", []))
    for kind in ("AWS::RDS::DBInstance", "AWS::RDS::DBProxyTargetGroup", "AWS::RDS::DBCluster"):
        assert set(resources(template, kind)) <= after, kind


def _consumer(template: dict[str, Any], value: Any) -> str:
    """The function a mapping's FunctionName leads to (through a `live` alias and version)."""
    (ref,) = re.findall(r'"Ref": "([A-Za-z0-9]+)"', json.dumps(value))
    resource = template["Resources"][ref]
    if resource["Type"] == "AWS::Lambda::Function":
        return ref
    return _consumer(template, resource["Properties"]["FunctionName"])


def test_the_approval_wait_survives_a_failing_handler_but_not_its_own_outcomes(
    prod: tuple[CairnStack, Template],
) -> None:
    """A database error in the wait Task's handler is retried (a failed execution would
    lose the timeout-deny); a cancel is never retried and the timeout goes to the deny."""
    template = prod[1].to_json()
    refs = {name: function_arn(name) for name in ("approval", "sleeptime")}
    machines = state_machine_definitions(
        template,
        {
            logical_id(template, "AWS::Lambda::Function", f"Functions{name}"): arn
            for name, arn in refs.items()
        }
        | {
            f"{logical_id(template, 'AWS::Lambda::Function', f'Functions{name}')}.Arn": arn
            for name, arn in refs.items()
        },
    )
    (asl,) = [a for a in map(json.loads, machines.values()) if "WaitForAnswer" in a["States"]]
    wait = asl["States"]["WaitForAnswer"]
    assert wait["Retry"][0] == {"ErrorEquals": ["Cancelled"], "MaxAttempts": 0}
    assert wait["Retry"][1]["ErrorEquals"] == ["States.TaskFailed"]  # all but States.Timeout
    assert wait["Retry"][1]["MaxAttempts"] >= 3
    assert [c["ErrorEquals"] for c in wait["Catch"]] == [["States.Timeout"], ["Cancelled"]]
    assert asl["States"][wait["Catch"][0]["Next"]]["Type"] == "Task"  # DenyOnTimeout


def test_the_api_stage_is_throttled(template: dict[str, Any]) -> None:
    (stage,) = resources(template, "AWS::ApiGatewayV2::Stage").values()
    settings = stage["Properties"]["DefaultRouteSettings"]
    assert (settings["ThrottlingRateLimit"], settings["ThrottlingBurstLimit"]) == (100, 200)


def test_a_dashboard_shows_what_an_operator_watches(template: dict[str, Any]) -> None:
    (board,) = resources(template, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(board["Properties"]["DashboardBody"])
    for title in (
        "Steps per minute",
        "Step duration",
        "Oldest queued step",
        "Dead-lettered",
        "Runs failed by the provider",
        "Approval waits started",
        "Proxy connections",
        "Aurora capacity",
        "Tokens by organization",
        "Model and step latency",
        "Throttles and failed runs",
    ):
        assert title in body, title
    # Per organization: a search over the dimension every step's metrics carry.
    assert "SEARCH('{Cairn,organization_id,service} MetricName=" in body.replace('\\"', '"')
    # Every metric the dashboard and alarms read is one the steps publish, and the
    # functions are told to publish them.
    from cairn.adapters.aws.metrics import METRICS

    named = set(re.findall(r'"Cairn",\s*"(\w+)"', body.replace('\\"', '"')))
    assert named and named - {"LlmApiErrors"} <= set(METRICS), named  # that one: a log filter
    for key in ("api", "step", "stream"):
        env = function(template, key)["Properties"]["Environment"]["Variables"]
        assert env["CAIRN_METRICS"] == "emf"
    (llm,) = resources(template, "AWS::Logs::MetricFilter").values()
    assert llm["Properties"]["FilterPattern"] == '"failed: llm_api_error"'


def test_functions_change_only_after_their_migrations(template: dict[str, Any]) -> None:
    custom = resources(template, "AWS::CloudFormation::CustomResource")
    (migrations,) = [k for k, r in custom.items() if "migrations" in r["Properties"]]
    for key in ("api", "step", "step-dead-letter", "approval", "sleeptime", "sweeper"):
        assert migrations in function(template, key).get("DependsOn", []), key


def test_functions_reach_the_database_as_the_app_role_with_iam_and_read_no_db_secret(
    template: dict[str, Any],
) -> None:
    (proxy,) = resources(template, "AWS::RDS::DBProxy").values()
    auth = proxy["Properties"]["Auth"]
    assert proxy["Properties"]["RequireTLS"] is True and len(auth) == 2
    assert all(a["IAMAuth"] == "REQUIRED" for a in auth)
    secrets = resources(template, "AWS::SecretsManager::Secret")
    (admin,) = [k for k in secrets if "DatabaseClusterSecret" in k]
    (app,) = [k for k in secrets if k.startswith("DatabaseAppUser")]
    attachments = {
        k
        for k, r in resources(template, "AWS::SecretsManager::SecretTargetAttachment").items()
        if r["Properties"]["SecretId"] == {"Ref": admin}
    }
    readers: dict[str, set[str]] = {}
    connects: dict[str, set[str]] = {}
    for policy in resources(template, "AWS::IAM::Policy").values():
        roles = {r["Ref"] for r in policy["Properties"]["Roles"]}
        for st in policy["Properties"]["PolicyDocument"]["Statement"]:
            text = json.dumps(st["Resource"])
            if "secretsmanager:GetSecretValue" in as_list(st["Action"]):
                for ref in re.findall(r'"Ref": "([A-Za-z0-9]+)"', text):
                    readers.setdefault(ref, set()).update(roles)
            if "rds-db:connect" in as_list(st["Action"]):
                for user in ("cairn_app", "cairn_admin"):
                    if f"/{user}" in text:
                        connects.setdefault(user, set()).update(roles)
    role = {
        key: function(template, key)["Properties"]["Role"]["Fn::GetAtt"][0]
        for key in ("api", "step", "sweeper", "migrate", "sandbox")
    }
    function_roles = set(role.values())
    # No function reads the admin's password (only the proxy and its rotation do).
    assert not any(readers.get(k, set()) & function_roles for k in {admin, *attachments})
    assert readers.get(app, set()) & function_roles == {role["migrate"]}
    assert connects["cairn_admin"] & function_roles == {role["migrate"]}
    assert {role["api"], role["step"], role["sweeper"]} <= connects["cairn_app"]
    assert role["sandbox"] not in connects["cairn_app"] | connects["cairn_admin"]


def test_the_watchdog_waits_for_the_queues_own_redelivery_first(template: dict[str, Any]) -> None:
    (steps,) = [
        q["Properties"]
        for k, q in resources(template, "AWS::SQS::Queue").items()
        if k.startswith("StepQueueSteps")
    ]
    step = function(template, "step")["Properties"]
    stall = int(step["Environment"]["Variables"]["CAIRN_RUN_STALL_SECONDS"])
    assert stall > steps["VisibilityTimeout"] + step["Timeout"]


def test_secret_rotation_runs_where_the_cluster_admits_it(template: dict[str, Any]) -> None:
    """The hosted rotation function logs in to the cluster itself to change the password:
    its security group must be one the cluster's admits (it was not)."""
    (schedule,) = resources(template, "AWS::SecretsManager::RotationSchedule").values()
    rotation_sg = schedule["Properties"]["HostedRotationLambda"]["VpcSecurityGroupIds"]
    (cluster,) = resources(template, "AWS::RDS::DBCluster").values()
    (cluster_sg,) = cluster["Properties"]["VpcSecurityGroupIds"]
    admitted = [
        r["Properties"]
        for r in resources(template, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["GroupId"] == cluster_sg
    ]
    assert any(r["SourceSecurityGroupId"] == rotation_sg for r in admitted)


def test_bedrock_models_named_in_the_context_are_the_only_ones_the_steps_may_call() -> None:
    models = "anthropic.claude-sonnet-4-20250514-v1:0,amazon.titan-embed-text-v2:0"
    app = cdk.App(context={**project_context(), "skip_bundling": "true", "bedrock_models": models})
    stack = build_app(app)
    app.synth()  # cdk-nag's AwsSolutions checks pass with the grants in the stack
    template = cdk.assertions.Template.from_stack(stack).to_json()
    callers: dict[str, list[Any]] = {}
    for policy in resources(template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "bedrock:InvokeModel" in as_list(statement["Action"]):
                for role in policy["Properties"]["Roles"]:
                    callers[role["Ref"]] = as_list(statement["Resource"])
    roles = {
        name: function(template, name)["Properties"]["Role"]["Fn::GetAtt"][0]
        for name in ("api", "stream", "step", "files", "sandbox", "sweeper", "migrate")
    }
    # The steps call models; the files function embeds folders' chunks.
    assert set(callers) == {roles["api"], roles["stream"], roles["step"], roles["files"]}
    arns = json.dumps(callers[roles["step"]])
    assert "foundation-model/anthropic.claude-sonnet-4-20250514-v1:0" in arns
    assert "foundation-model/amazon.titan-embed-text-v2:0" in arns and "*" not in arns
    _, plain = synth()
    assert "bedrock:" not in json.dumps(plain.to_json())  # no flag, no grant


def test_a_cross_region_inference_profile_is_granted_with_its_model_in_any_region() -> None:
    profile = "us.anthropic.claude-sonnet-4-20250514-v1:0"
    app = cdk.App(context={**project_context(), "skip_bundling": "true", "bedrock_models": profile})
    stack = build_app(app)
    app.synth()  # cdk-nag passes: the any-region model grant is acknowledged for it alone
    template = cdk.assertions.Template.from_stack(stack).to_json()
    step_role = function(template, "step")["Properties"]["Role"]["Fn::GetAtt"][0]
    arns = [
        json.dumps(statement["Resource"])
        for policy in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": step_role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if "bedrock:InvokeModel" in as_list(statement["Action"])
    ]
    granted = " ".join(arns)
    assert f"inference-profile/{profile}" in granted
    assert ":bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0" in granted


def test_organizations_own_keys_are_secrets_under_the_stacks_prefix(
    template: dict[str, Any],
) -> None:
    """The providers API keeps each key as a secret under `<stack>/providers/`: the API
    functions may make, rotate, read and delete those; steps only read them; the migrate
    function (a Letta import) only puts keys away; nothing else."""
    env = function(template, "api")["Properties"]["Environment"]["Variables"]
    assert env["CAIRN_PROVIDER_SECRET_PREFIX"] == "Cairn/providers"
    granted: dict[str, set[str]] = {}
    for policy in resources(template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "secret:Cairn/providers/*" in json.dumps(statement["Resource"]):
                for role in policy["Properties"]["Roles"]:
                    granted.setdefault(role["Ref"], set()).update(as_list(statement["Action"]))
    roles = {
        name: function(template, name)["Properties"]["Role"]["Fn::GetAtt"][0]
        for name in ("api", "stream", "step", "files", "migrate")
    }
    assert set(granted) == set(roles.values())
    assert granted[roles["step"]] == {"secretsmanager:GetSecretValue"}
    assert granted[roles["files"]] == {"secretsmanager:GetSecretValue"}  # embedding keys
    assert granted[roles["migrate"]] == {
        "secretsmanager:CreateSecret",
        "secretsmanager:PutSecretValue",
        "secretsmanager:TagResource",
    }
    assert (
        granted[roles["api"]]
        == granted[roles["stream"]]
        == {
            "secretsmanager:GetSecretValue",
            "secretsmanager:CreateSecret",
            "secretsmanager:PutSecretValue",
            "secretsmanager:DeleteSecret",
            "secretsmanager:TagResource",
        }
    )


def test_the_large_knobs_are_flags_that_reach_the_template() -> None:
    defaults = Shape.from_context({}.get)
    assert (defaults.min_acu, defaults.db_max_acu, defaults.step_concurrency) == (0.5, 8, 50)
    context = {
        "db_min_acu": "2",
        "db_max_acu": "64",
        "step_concurrency": "400",
        "fifo_high_throughput": "true",
        "api_concurrency": "100",
        "stream_concurrency": "50",
        "api_rate_limit": "500",
    }
    _, t = synth(**context)
    template = t.to_json()
    t.has_resource_properties(
        "AWS::RDS::DBCluster",
        {"ServerlessV2ScalingConfiguration": {"MinCapacity": 2, "MaxCapacity": 64}},
    )
    mappings = resources(template, "AWS::Lambda::EventSourceMapping").values()
    concurrency = sorted(
        m["Properties"]["ScalingConfig"]["MaximumConcurrency"]
        for m in mappings
        if "ScalingConfig" in m["Properties"]
    )
    assert concurrency == [4, 5, 400]  # files' jobs, embedding jobs, steps
    fifo = [
        q["Properties"]
        for q in resources(template, "AWS::SQS::Queue").values()
        if q["Properties"].get("FifoQueue") and "RedrivePolicy" in q["Properties"]
    ]
    assert len(fifo) == 3 and all(  # steps, embedding jobs, files' jobs
        q["FifoThroughputLimit"] == "perMessageGroupId"
        and q["DeduplicationScope"] == "messageGroup"
        for q in fifo
    )
    assert function(template, "api")["Properties"]["ReservedConcurrentExecutions"] == 100
    assert function(template, "stream")["Properties"]["ReservedConcurrentExecutions"] == 50
    (stage,) = resources(template, "AWS::ApiGatewayV2::Stage").values()
    settings = stage["Properties"]["DefaultRouteSettings"]
    assert (settings["ThrottlingRateLimit"], settings["ThrottlingBurstLimit"]) == (500, 1000)
    env = function(template, "step")["Properties"]["Environment"]["Variables"]
    assert env["CAIRN_ORG_MAX_RUNS"] == "200"  # half the steps, as by default
    assert (env["CAIRN_STEP_CONCURRENCY"], env["CAIRN_ORG_RESERVE"]) == ("400", "80")


@pytest.mark.parametrize(
    ("context", "says"),
    [
        ({"db_max_acu": "300"}, "db_max_acu: from 0 to 256"),
        ({"db_min_acu": "0.3"}, "db_min_acu: 0, or 0.5 to 256 in half units"),
        ({"db_min_acu": "16", "db_max_acu": "8"}, "db_min_acu: 16 is above db_max_acu 8"),
        ({"db_min_acu": "0"}, "db_min_acu: 0 (auto-pause) needs size=small"),
        ({"db_min_acu": "0", "dev": "true"}, "RDS Proxy"),
        ({"step_concurrency": "1"}, "step_concurrency: from 2 to 1000"),
        ({"step_concurrency": "many"}, "step_concurrency: a whole number"),
        ({"fifo_high_throughput": "maybe"}, "fifo_high_throughput: true or false"),
    ],
)
def test_a_flag_given_a_value_it_cannot_take_stops_the_synthesis_naming_it(
    context: dict[str, str], says: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        synth(**context)


def test_the_small_shape_pauses_its_database_and_has_no_proxy_or_nat_gateway() -> None:
    """`size=small`: the functions connect to the cluster itself (IAM tokens, TLS checked
    against the RDS bundle, idle sessions ended), the cluster pauses at 0 ACU, one NAT
    instance instead of gateways, no SnapStart, a sweep an hour."""
    _, t = synth(size="small")
    template = t.to_json()
    assert not resources(template, "AWS::RDS::DBProxy")
    assert not resources(template, "AWS::EC2::NatGateway")
    (nat,) = resources(template, "AWS::EC2::Instance").values()
    assert nat["Properties"]["InstanceType"] == "t4g.nano"
    assert nat["Properties"]["SourceDestCheck"] is False
    (root,) = nat["Properties"]["BlockDeviceMappings"]
    assert root["Ebs"]["Encrypted"] is True
    routes = [r["Properties"] for r in resources(template, "AWS::EC2::Route").values()]
    nat_id = next(iter(resources(template, "AWS::EC2::Instance")))
    assert sum(r.get("InstanceId") == {"Ref": nat_id} for r in routes) == 2  # both AZs
    ((cluster_id, cluster),) = resources(template, "AWS::RDS::DBCluster").items()
    scaling = cluster["Properties"]["ServerlessV2ScalingConfiguration"]
    assert scaling["MinCapacity"] == 0 and scaling["SecondsUntilAutoPause"] == 300
    assert cluster["Properties"]["EnableIAMDatabaseAuthentication"] is True
    assert len(resources(template, "AWS::RDS::DBInstance")) == 1
    t.resource_count_is("AWS::SecretsManager::Secret", 3)  # admin, provider keys, sealing
    for key in ("api", "step", "sweeper"):
        props = function(template, key)["Properties"]
        env = props["Environment"]["Variables"]
        assert env["CAIRN_DB_HOST"] == {"Fn::GetAtt": [cluster_id, "Endpoint.Address"]}
        assert env["CAIRN_DB_IAM_USER"] == "cairn_app"
        assert env["CAIRN_DB_SSLROOTCERT"] == "/opt/rds-ca/global-bundle.pem"
        assert int(env["CAIRN_DB_IDLE_SESSION_SECONDS"]) < 300  # well inside the pause delay
        assert "SnapStart" not in props
    migrate = function(template, "migrate")["Properties"]["Environment"]["Variables"]
    assert migrate["CAIRN_DB_APP_IAM"] == "true" and migrate["CAIRN_DB_IAM_USER"] == ""
    # The admin's secret as attached to the cluster (with its host): the owner's own login.
    (attached,) = resources(template, "AWS::SecretsManager::SecretTargetAttachment")
    assert migrate["CAIRN_DB_SECRET_ARN"] == {"Ref": attached}
    (sweep,) = resources(template, "AWS::Events::Rule").values()
    assert sweep["Properties"]["ScheduleExpression"] == "rate(1 hour)"
    # Its rounds are skipped while none of the stack's functions ran (a round would wake
    # the paused database): it reads their invocation counts, over a stalled run's wait
    # and two rounds.
    sweeper = function(template, "sweeper")["Properties"]["Environment"]["Variables"]
    asked = json.dumps(sweeper["CAIRN_SWEEP_ACTIVITY_FUNCTIONS"])
    assert asked.count('"Ref"') == 6 and "Functionsstep" in asked
    stall = int(sweeper["CAIRN_RUN_STALL_SECONDS"])
    assert int(sweeper["CAIRN_SWEEP_ACTIVITY_SECONDS"]) == stall + 2 * 3600
    # Alarms sized for it: those that need a person, once for the stack; no dashboard.
    alarms = resources(template, "AWS::CloudWatch::Alarm")
    assert len(alarms) == 9 and not resources(template, "AWS::CloudWatch::Dashboard")
    named = json.dumps(alarms)
    assert "DeadLetteredSteps" in named and "ModelLatency" in named
    assert resources(
        synth(size="small", dashboard="true")[1].to_json(), "AWS::CloudWatch::Dashboard"
    )
    # The app role may connect to this cluster (its resource id), and nothing broader.
    connects = [
        st
        for policy in resources(template, "AWS::IAM::Policy").values()
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
        if "rds-db:connect" in as_list(st["Action"])
    ]
    assert connects and all(
        "DBClusterResourceId" in json.dumps(st["Resource"])
        and "/cairn_app" in json.dumps(st["Resource"])
        for st in connects
    )
    # The cluster admits the functions directly.
    (cluster_sg,) = cluster["Properties"]["VpcSecurityGroupIds"]
    functions_sg = function(template, "api")["Properties"]["VpcConfig"]["SecurityGroupIds"][0]
    admitted = [
        r["Properties"]
        for r in resources(template, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["GroupId"] == cluster_sg
    ]
    assert any(r["SourceSecurityGroupId"] == functions_sg for r in admitted)


def test_scheduled_messages_fire_through_eventbridge_scheduler(template: dict[str, Any]) -> None:
    """A schedule group of the stack's, a role EventBridge Scheduler assumes that may only
    invoke the (named) sweeper, and the API and step functions told all three and allowed to
    make schedules in that group alone."""
    (group_id,) = resources(template, "AWS::Scheduler::ScheduleGroup")
    env = function(template, "api")["Properties"]["Environment"]["Variables"]
    assert env["CAIRN_SCHEDULER_GROUP"] == {"Ref": group_id}
    sweeper = function(template, "sweeper")["Properties"]
    assert sweeper["FunctionName"] == "Cairn-sweeper"
    assert "Cairn-sweeper" in json.dumps(env["CAIRN_SCHEDULER_TARGET_ARN"])
    role_id = env["CAIRN_SCHEDULER_ROLE_ARN"]["Fn::GetAtt"][0]
    role = resources(template, "AWS::IAM::Role")[role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "scheduler.amazonaws.com"
    }
    invokes = [
        st
        for p in resources(template, "AWS::IAM::Policy").values()
        if p["Properties"]["Roles"] == [{"Ref": role_id}]
        for st in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert [st["Action"] for st in invokes] == ["lambda:InvokeFunction"]
    assert "Cairn-sweeper" in json.dumps(invokes[0]["Resource"])
    makers = {
        p["Properties"]["Roles"][0]["Ref"]
        for p in resources(template, "AWS::IAM::Policy").values()
        for st in p["Properties"]["PolicyDocument"]["Statement"]
        if "scheduler:CreateSchedule" in as_list(st["Action"])
    }
    assert makers == {
        function(template, k)["Properties"]["Role"]["Fn::GetAtt"][0]
        for k in ("api", "stream", "step")
    }


def test_browser_origins_are_a_flag_the_functions_answer_cors_with() -> None:
    """`-c cors_origins=...` reaches the API functions (they answer preflights themselves,
    behind API Gateway's catch-all route and at the streaming URL); none by default; an
    origin that is not http(s)://host stops the synthesis naming the flag."""
    _, t = synth(cors_origins="https://console.example.com, http://localhost:5173")
    for name in ("api", "stream"):
        env = function(t.to_json(), name)["Properties"]["Environment"]["Variables"]
        assert env["CAIRN_CORS_ORIGINS"] == "https://console.example.com,http://localhost:5173"
    assert "CAIRN_CORS_ORIGINS" not in json.dumps(synth()[1].to_json())
    with pytest.raises(ValueError, match="cors_origins"):
        Shape.from_context({"cors_origins": "console.example.com"}.get)


def test_a_collector_flag_sends_every_functions_traces_there() -> None:
    """`-c otel_endpoint=...` sets the standard OTLP variables on every function (each
    exports its spans before it answers: cairn/tracing.py); unset, none has them."""
    _, t = synth(otel_endpoint="https://otel.example.com:4318/")
    for name in ("api", "stream", "step", "approval", "sleeptime", "sweeper"):
        env = function(t.to_json(), name)["Properties"]["Environment"]["Variables"]
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "https://otel.example.com:4318"
        assert "OTEL_SERVICE_NAME" in env
    assert "OTEL_EXPORTER" not in json.dumps(synth()[1].to_json())
    with pytest.raises(ValueError, match="otel_endpoint"):
        Shape.from_context({"otel_endpoint": "otel.example.com"}.get)


def test_the_reader_scales_on_its_own_and_is_not_paid_as_a_second_writer(
    template: dict[str, Any],
) -> None:
    """Cairn reads nothing from the reader: promotion tier 2 (scales independently, at the
    floor while idle), not 0-1 (at the writer's capacity all the time): database.py."""
    instances = resources(template, "AWS::RDS::DBInstance").values()
    tiers = sorted(i["Properties"].get("PromotionTier", 1) for i in instances)
    assert len(tiers) == 2 and tiers[-1] == 2


def test_a_single_tenant_stack_has_no_organization_share() -> None:
    """By default one organization's runs hold at most half the steps' concurrency (25 of
    50); `-c single_tenant=true` turns the share off, so its tenant can use all of it."""
    for context, share in (({}, "25"), ({"single_tenant": "true"}, "0")):
        _, t = synth(**context)
        env = function(t.to_json(), "step")["Properties"]["Environment"]["Variables"]
        assert env["CAIRN_ORG_MAX_RUNS"] == share, context
    with pytest.raises(ValueError, match="single_tenant"):
        Shape.from_context({"single_tenant": "perhaps"}.get)
