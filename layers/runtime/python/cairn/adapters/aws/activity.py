"""Whether any of the stack's functions ran lately, from CloudWatch's Lambda metrics: the
small shape's sweeper asks before a round, since a round wakes a paused database (about
six minutes of it each time) and an idle stack has nothing for it to find."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3


def ran_within(functions: list[str], seconds: float, client: Any = None) -> bool:
    """True when any of `functions` was invoked in the last `seconds` (or CloudWatch could
    not say: a sweep too many costs minutes of database, one too few could leave a run)."""
    if not functions or seconds <= 0:
        return True
    cloudwatch = client or boto3.client("cloudwatch")
    end = datetime.now(UTC)
    period = max(60, int(seconds) // 60 * 60)
    queries = [
        {
            "Id": f"f{n}",
            "MetricStat": {
                "Metric": {
                    "Namespace": "AWS/Lambda",
                    "MetricName": "Invocations",
                    "Dimensions": [{"Name": "FunctionName", "Value": name}],
                },
                "Period": period,
                "Stat": "Sum",
            },
        }
        for n, name in enumerate(functions)
    ]
    try:
        found = cloudwatch.get_metric_data(
            MetricDataQueries=queries,
            StartTime=end - timedelta(seconds=seconds),
            EndTime=end + timedelta(minutes=1),  # a point stamped as it arrives is counted
        )
    except Exception:
        return True
    return any(sum(r.get("Values") or ()) > 0 for r in found.get("MetricDataResults", ()))
