"""The small shape's sweeper skips a round when none of the stack's functions ran lately
(CloudWatch's Lambda invocation counts, through moto): a round would wake its paused
database for six minutes and find nothing; once anything ran, it sweeps."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from cairn.adapters.aws.activity import ran_within
from cairn.adapters.local.lambdas import LocalContext, load_handler
from cairn.assembly.build import build_runtime, use_runtime
from cairn.config import Settings
from cairn.store.db import Database

FUNCTIONS = "Cairn-api-1A2B,Cairn-step-3C4D"


@pytest.fixture
def cloudwatch(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        yield boto3.client("cloudwatch")


def invoked(client: object, name: str) -> None:
    client.put_metric_data(  # type: ignore[attr-defined]
        Namespace="AWS/Lambda",
        MetricData=[
            {
                "MetricName": "Invocations",
                "Dimensions": [{"Name": "FunctionName", "Value": name}],
                "Value": 1,
            }
        ],
    )


def test_a_function_counts_as_activity_only_if_it_ran(cloudwatch: object) -> None:
    names = FUNCTIONS.split(",")
    assert not ran_within(names, 3600, cloudwatch)
    invoked(cloudwatch, "Some-other-function")
    assert not ran_within(names, 3600, cloudwatch)
    invoked(cloudwatch, names[1])
    assert ran_within(names, 3600, cloudwatch)
    # Not asked (no functions named, or no window): always sweep.
    assert ran_within([], 3600, cloudwatch) and ran_within(names, 0, cloudwatch)


def test_cloudwatch_that_cannot_answer_means_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def get_metric_data(self, **_: object) -> None:
            raise RuntimeError("throttled")

    assert ran_within(["f"], 3600, Broken())


def test_the_sweeper_skips_without_touching_the_database_until_a_function_runs(
    cloudwatch: object, db: Database
) -> None:
    settings = Settings(sweep_activity_functions=FUNCTIONS, sweep_activity_seconds=7200)
    # No database at all: a skipped round never connects.
    use_runtime(
        build_runtime(settings.model_copy(update={"database_url": "postgresql://127.0.0.1:1/none"}))
    )
    sweeper = load_handler("sweeper")
    try:
        answer = sweeper({}, LocalContext(function_name="sweeper"))
        assert answer == {"skipped": "no function ran in 7200 s"}
        invoked(cloudwatch, "Cairn-api-1A2B")
        use_runtime(build_runtime(settings, db=db))
        answer = sweeper({}, LocalContext(function_name="sweeper"))
        assert "skipped" not in answer and "republished" in str(answer)
    finally:
        use_runtime(None)
