"""The API's two doors: API Gateway's HTTP API in front of the `api` function (throttled per
stage, its access logged), and the `stream` function's URL, which streams responses."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

ACCESS_LOG_FORMAT = (
    '{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",'
    '"route":"$context.routeKey","status":"$context.status",'
    '"latency":"$context.integrationLatency"}'
)


class Api(Construct):
    """Made as the stack's `HttpApi`: the HTTP API is its `Default` child, so its resources
    keep the logical ids they had before this construct (a new id would replace the API,
    and its URL with it)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        api_name: str,
        handler: lambda_.IFunction,
        api: lambda_.Function,
        stream: lambda_.Function,
        rate_limit: int,
        api_concurrency: int | None,
        stream_concurrency: int | None,
        retention: logs.RetentionDays,
        removal: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=retention, removal_policy=removal
        )
        # Its id before the API was a construct of its own (kept: see the class).
        self.access_logs.node.default_child.override_logical_id("ApiAccessLogsE9DF007D")  # type: ignore[union-attr]
        self.http_api = apigw.HttpApi(
            self,
            "Default",
            api_name=api_name,
            description="Cairn: the Letta-compatible REST API",
            default_integration=integrations.HttpLambdaIntegration(
                "Api", handler, payload_format_version=apigw.PayloadFormatVersion.VERSION_2_0
            ),
        )
        stage = self.http_api.default_stage
        assert stage is not None
        cfn_stage = stage.node.default_child
        # Per-stage throttling: a client in a loop meets 429s from API Gateway before it can
        # take the account's Lambda concurrency from the steps (context api_rate_limit).
        cfn_stage.default_route_settings = apigw.CfnStage.RouteSettingsProperty(  # type: ignore[union-attr]
            throttling_rate_limit=rate_limit, throttling_burst_limit=2 * rate_limit
        )
        cfn_stage.access_log_settings = apigw.CfnStage.AccessLogSettingsProperty(  # type: ignore[union-attr]
            destination_arn=self.access_logs.log_group_arn, format=ACCESS_LOG_FORMAT
        )
        self.url = self.http_api.api_endpoint
        # The same API, streaming: the function checks the API key itself (as behind API
        # Gateway); Lambda's own IAM auth would need clients to sign requests, which Letta's
        # SDKs do not. Use it as the base URL where streams should stream.
        self.stream_url = stream.add_function_url(
            auth_type=lambda_.FunctionUrlAuthType.NONE,
            invoke_mode=lambda_.InvokeMode.RESPONSE_STREAM,
        ).url
        if stream_concurrency is not None:
            # No API Gateway stage in front of the URL: its function's reserved concurrency
            # caps how many streams (and API key checks) run at once; more get 429.
            if stream_concurrency < 1:
                raise ValueError("stream_concurrency: a number of streams, 1 or more")
            streams = stream.node.default_child
            streams.reserved_concurrent_executions = stream_concurrency  # type: ignore[union-attr]
        if api_concurrency is not None:
            # The API's share of the account's concurrency, kept for it and capped: a flood of
            # requests meets 429s (Lambda's throttle) instead of taking the steps' share.
            requests = api.node.default_child
            requests.reserved_concurrent_executions = api_concurrency  # type: ignore[union-attr]
