"""cdk-nag AwsSolutions findings we accept, each with the reason a reviewer would want.

Every other AwsSolutions rule passes; synthesis fails on any new finding.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations

from cairn_infra.stack import INFERENCE_GEOS

REASONS = {
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
    "AWSLambdaBasicExecutionRole]": "The AWS-managed basic execution policy only lets a "
    "function write its own CloudWatch logs; a hand-written copy would add nothing.",
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
    "AWSLambdaVPCAccessExecutionRole]": "Required for a function in a VPC to create and delete "
    "its network interfaces; the EC2 ENI actions do not support resource-level permissions.",
    "AwsSolutions::AwsSolutions-IAM5[Resource::*]": "Only X-Ray (PutTraceSegments, "
    "PutTelemetryRecords, sampling), Step Functions' CloudWatch Logs delivery actions and, in "
    "the small shape, the sweeper's cloudwatch:GetMetricData (it reads the functions' "
    "invocation counts to skip a round that would wake the paused database) are on '*': "
    "none of these supports resource-level permissions. tests/infra checks that no other "
    "statement has a wildcard.",
    "AwsSolutions::AwsSolutions-IAM5[Resource::<FunctionssandboxFCA814B5.Arn>:*]": "lambda:"
    "InvokeFunction on the sandbox function's versions and aliases (':*'), as grantInvoke "
    "writes it; it names that one function.",
    "AwsSolutions::AwsSolutions-IAM5[Resource::<FunctionsapprovalD0D0D2CB.Arn>:*]": "The "
    "approval state machine invokes the approval function's versions (':*'); one function.",
    "AwsSolutions::AwsSolutions-IAM5[Resource::<FunctionssleeptimeB40C0605.Arn>:*]": "The "
    "sleeptime state machine invokes the sleeptime function's versions (':*'); one function.",
    "AwsSolutions::AwsSolutions-IAM5[Resource::<Functionsmigrate1DF4BEC8.Arn>:*]": "The CDK "
    "custom-resource provider invokes the migrate function's versions (':*'); one function.",
    "AwsSolutions::AwsSolutions-IAM5[Resource::<DocumentsOriginalsAFEDDF0B.Arn>/*]": "The "
    "originals of files uploaded to folders are one object each, named by organization, folder "
    "and file at upload: the API functions may put and delete objects of that one bucket, the "
    "files function only get them (exact actions, no wildcard).",
    "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:"
    "<AWS::AccountId>:schedule/<ScheduleGroup>/*]": "Each scheduled message is an EventBridge "
    "schedule named by its id, made at run time in the stack's own schedule group: the API "
    "and step functions may create and delete schedules of that one group only.",
    "AwsSolutions::AwsSolutions-L1": "The runtime is pinned on purpose: the dependency layer's "
    "wheels and .pyc files are built for exactly this Python (3.12, which SnapStart supports). "
    "A newer runtime is a deliberate change with a layer rebuild and bench/packaging.py, not "
    "something a linter should move.",
    "AwsSolutions::AwsSolutions-APIG4": "Letta clients send 'Authorization: Bearer <key>'; the "
    "API function checks the key against hashed keys in the database (401 otherwise) and maps "
    "it to an organization. An API Gateway authorizer would add a second Lambda call per "
    "request for the same check.",
    "AwsSolutions::AwsSolutions-SMG4": "Model provider keys are issued by the providers; AWS "
    "cannot rotate them. The database admin's secret, which AWS can rotate, rotates every 30 "
    "days. The application role's secret is read only by RDS Proxy and the migrate function: "
    "the functions log in with 15-minute IAM tokens, never with it. The sealing key must not "
    "rotate: the agents' secrets sealed with it would no longer open.",
}


# Only for `-c dev=true`, whose database is meant to go with the stack.
DEV_REASONS = {
    "AwsSolutions::AwsSolutions-RDS10": "A dev stack (-c dev=true) is disposable by design: "
    "its database is deleted with the stack (docs/deploy.md, context flags), so deletion "
    "protection is off on it alone; the production shape keeps it on (tests/infra).",
}


# Only for `-c size=small`, whose way out is one NAT instance (network.py).
SMALL_REASONS = {
    "AwsSolutions::AwsSolutions-EC28": "The small shape's NAT instance forwards packets and "
    "keeps no state; basic five-minute metrics are enough to see it, and detailed monitoring "
    "would add about $2 a month to a stack meant to idle for a few dollars.",
    "AwsSolutions::AwsSolutions-EC29": "The NAT instance is replaceable (CloudFormation makes "
    "it again from the same image and user data) and EC2 recovers it on a failed system "
    "check; termination protection would only stop `cdk destroy` from removing the stack.",
}


# Organizations' own provider keys are one secret each, made at run time under the stack's
# prefix: the API functions may make, rotate, read and delete those, and nothing else.
OWN_KEYS_REASON = (
    "Each organization's own model provider key (the providers API) is a secret made at run "
    "time, named <stack>/providers/<organization>/<provider id>: the grant is on that prefix "
    "only, which holds nothing else; steps may only read, and the migrate function (a Letta "
    "import) only put keys away."
)


PROFILE_REASON = (
    "A cross-region inference profile routes each call to one of its regions, chosen by "
    "Bedrock: the foundation model named in the bedrock_models context flag is allowed in any "
    "region (only that model), as AWS documents for inference profiles."
)


def acknowledge(
    stack: Stack, bedrock_models: tuple[str, ...] = (), *, dev: bool = False, small: bool = False
) -> None:
    own_keys = (
        "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:"
        f"<AWS::Region>:<AWS::AccountId>:secret:{stack.stack_name}/providers/*]"
    )
    profiles = {
        "AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::"
        f"foundation-model/{model.partition('.')[2]}]": PROFILE_REASON
        for model in bedrock_models
        if model.partition(".")[0] in INFERENCE_GEOS
    }
    dev_only = DEV_REASONS if dev else {}
    small_only = SMALL_REASONS if small else {}
    acknowledged = {**REASONS, own_keys: OWN_KEYS_REASON, **profiles, **dev_only, **small_only}
    for rule, reason in acknowledged.items():
        Validations.of(stack).acknowledge(Acknowledgment(id=rule, reason=reason))
