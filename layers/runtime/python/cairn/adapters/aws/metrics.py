"""The operator's metrics as CloudWatch's embedded metric format (EMF), through Powertools:
two log lines a step, which CloudWatch turns into metrics in the `Cairn` namespace: for the
whole stack (dimension `service`) and, for some, for the organization (`organization_id`).
Custom metrics bill per metric-month only while published: `bench/cost.py` counts them."""

from __future__ import annotations

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from cairn.run.metering import Meter

NAMESPACE = "Cairn"
SERVICE = "cairn"
# Every metric this adapter publishes for the stack (dimension `service`)...
METRICS = (
    "Steps",
    "StepLatency",
    "ModelLatency",
    "InputTokens",
    "OutputTokens",
    "RunsFailed",
    "Throttles",
)
# ...and those it publishes again per organization (dimension `organization_id`): what a
# tenant uses and meets, not the latencies, which are the stack's. Each is a custom metric
# per organization a month (bench/cost.py prices both sets).
PER_ORGANIZATION = ("Steps", "InputTokens", "OutputTokens", "Throttles")


class EmfMeter(Meter):
    def _emit(self, org_id: str, values: dict[str, tuple[MetricUnit, float]], **props: str) -> None:
        # Two records: the stack's (every metric) and the organization's (its share of them).
        # A fresh set each time: a batch's steps may be of different organizations.
        for dimensions, names in (
            ({}, METRICS),
            ({"organization_id": org_id}, PER_ORGANIZATION),
        ):
            metrics = EphemeralMetrics(namespace=NAMESPACE, service=SERVICE)
            if dimensions:
                metrics.set_default_dimensions(**dimensions)
            for name, (unit, value) in values.items():
                if name in names:
                    metrics.add_metric(name=name, unit=unit, value=value)
            for key, said in props.items():
                metrics.add_metadata(key=key, value=said)
            metrics.flush_metrics()

    def step(
        self,
        org_id: str,
        *,
        step_ms: float,
        model_ms: float | None,
        input_tokens: int,
        output_tokens: int,
        run_failed: bool,
    ) -> None:
        values = {
            "Steps": (MetricUnit.Count, 1.0),
            "StepLatency": (MetricUnit.Milliseconds, step_ms),
            "InputTokens": (MetricUnit.Count, float(input_tokens)),
            "OutputTokens": (MetricUnit.Count, float(output_tokens)),
        }
        if model_ms is not None:
            values["ModelLatency"] = (MetricUnit.Milliseconds, model_ms)
        if run_failed:
            values["RunsFailed"] = (MetricUnit.Count, 1.0)
        self._emit(org_id, values)

    def throttled(self, org_id: str, limit: str) -> None:
        self._emit(org_id, {"Throttles": (MetricUnit.Count, 1.0)}, limit=limit)
