"""What a step tells the operator's metrics (docs/operations.md, "Metrics"): a port, given to
the engine at assembly; CloudWatch's embedded metric format on AWS
(adapters/aws/metrics.py), nothing locally."""

from __future__ import annotations


class Meter:
    """Counts nothing: what runs locally, and the base an adapter overrides."""

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
        """A committed step: its time, its model call's, its tokens; whether it failed its run."""

    def throttled(self, org_id: str, limit: str) -> None:
        """A request or a step held back by a limit (`limit`: which one)."""


NoMeter = Meter
