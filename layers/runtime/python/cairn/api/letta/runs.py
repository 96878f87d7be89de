"""Runs, steps, their usage, metrics and traces, and batches, as Letta sends them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cairn.api.letta.messages import expand
from cairn.api.letta.times import iso
from cairn.domain.batches import Batch
from cairn.domain.messages import Message
from cairn.domain.runs import Run, Step, Usage
from cairn.services.requests import LettaRequest

# Cairn's own keys of a run's request, not Letta's.
INTERNAL = ("input", "coalesce_until", "traceparent")


def run_json(run: Run) -> dict[str, Any]:
    data = run.model_dump(
        mode="json",
        exclude={
            "organization_id",
            "usage",
            "approval_task_token",
            "approval_answered_by",
            "task_token",
            "error",
            "updated_at",  # not in Letta's Run, which admits no other keys
        },
    )
    metadata = dict(run.metadata)
    if run.error:
        metadata["error"] = run.error
    return data | {
        "metadata": metadata,
        "created_at": iso(run.created_at),
        "completed_at": iso(run.completed_at),
        "request_config": {
            k: v
            for k, v in run.request_config.items()
            if k not in ("input", "coalesce_until", "traceparent")
        },
    }


def batch_json(batch: Batch) -> dict[str, Any]:
    """Letta's BatchJob."""
    return {
        "id": batch.id,
        "status": batch.status,
        "job_type": "batch",
        "metadata": {"job_type": "batch_messages", "run_ids": batch.run_ids},
        "created_at": iso(batch.created_at),
        "updated_at": iso(batch.updated_at),
        "completed_at": iso(batch.cancelled_at or batch.completed_at)
        if batch.status != "running"
        else None,
        "stop_reason": None,
        "background": None,
        "agent_id": None,
        "callback_url": batch.callback_url,
        "callback_sent_at": None,
        "callback_status_code": None,
        "callback_error": None,
        "ttft_ns": None,
        "total_duration_ns": None,
        "user_id": batch.created_by_id,
        "created_by_id": batch.created_by_id,
        "last_updated_by_id": batch.created_by_id,
    }


def response_json(
    made: list[Message], stop_reason: str | None, usage: dict[str, Any], req: LettaRequest
) -> dict[str, Any]:
    """Letta's LettaResponse for what a send produced, shown as the request asks."""
    shown = expand(made, use_assistant_message=req.use_assistant_message)
    if req.include_return_message_types:
        shown = [m for m in shown if m["message_type"] in req.include_return_message_types]
    return {
        "messages": shown,
        "stop_reason": {"message_type": "stop_reason", "stop_reason": stop_reason},
        "usage": usage,
    }


def usage_json(run: Run, usage: Usage | None = None) -> dict[str, Any]:
    usage = usage or run.usage
    return {
        "message_type": "usage_statistics",
        "completion_tokens": usage.completion_tokens,
        "prompt_tokens": usage.prompt_tokens,
        "total_tokens": usage.total_tokens,
        "step_count": usage.step_count,
        "run_ids": None,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def step_json(step: Step) -> dict[str, Any]:
    """Letta's Step (which admits no other keys): a failed step's error as error_type/data."""
    data = step.model_dump(
        mode="json",
        exclude={
            "organization_id",
            "step_index",
            "kind",
            "error",
            "started_at",
            "completed_at",
            "created_at",
            "llm_request_ns",
            "tool_execution_ns",
            # Cairn's usage columns (GET /v1/usage reads them): not in Letta's Step.
            "cached_input_tokens",
            "cache_write_tokens",
            "reasoning_tokens",
            "tool_calls",
        },
    )
    error = step.error or {}
    return data | {
        "messages": [],
        "trace_id": None,
        "error_type": error.get("type"),
        "error_data": error or None,
    }


def _ns(at: datetime | None) -> int | None:
    return None if at is None else int(at.timestamp() * 1e9)


def step_metrics_json(step: Step) -> dict[str, Any]:
    """Letta's StepMetrics from what the step recorded (the delivery that committed it)."""
    started, ended = _ns(step.started_at), _ns(step.completed_at)
    return {
        "id": step.id,
        "organization_id": step.organization_id,
        "run_id": step.run_id,
        "agent_id": step.agent_id,
        "step_start_ns": started,
        "llm_request_start_ns": started if step.llm_request_ns is not None else None,
        "llm_request_ns": step.llm_request_ns,
        "tool_execution_ns": step.tool_execution_ns,
        "step_ns": ended - started if started is not None and ended is not None else None,
    }


def run_metrics_json(run: Run, num_steps: int, tools_used: list[str]) -> dict[str, Any]:
    return {
        "id": run.id,
        "organization_id": run.organization_id,
        "agent_id": run.agent_id,
        "run_start_ns": _ns(run.created_at),
        "run_ns": run.total_duration_ns,
        "num_steps": num_steps,
        "tools_used": tools_used,
    }


def trace_json(step: Step, trace: dict[str, Any]) -> dict[str, Any]:
    """Letta's ProviderTrace; the response is the model's answer as Cairn read it."""
    return {
        "id": f"provider_trace-{step.id.removeprefix('step-')}",
        "step_id": step.id,
        "request_json": trace["request_json"],
        "response_json": trace["response_json"],
        "created_at": iso(trace["created_at"]),
    }
