"""Runs and their messages, steps and usage."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta, streaming
from cairn.api.paging import paged
from cairn.api.params import RunId, StepId
from cairn.services import runs
from cairn.services.pages import Page
from cairn.services.requests import RetrieveStream, StepFeedback

router = APIGatewayHttpRouter()


@router.get("/runs/")
@paged(limit=100, order="desc")
def list_runs(
    agent_id: str | None = None,
    agent_ids: Annotated[list[str] | None, Query()] = None,
    statuses: Annotated[list[str] | None, Query()] = None,
    background: bool | None = None,
    stop_reason: str | None = None,
    active: bool = False,
    *,
    page: Page,
) -> Response[Any]:
    found = runs.list_runs(
        http.rt(),
        http.org_id(),
        agent_ids=[agent_id] if agent_id else agent_ids,
        statuses=statuses,
        background=background,
        stop_reason=stop_reason,
        active=active,
        page=page,
    )
    return http.json_reply(200, [letta.run_json(r) for r in found])


@router.get("/runs/active")
def active_runs(agent_id: str | None = None, background: bool | None = None) -> Response[Any]:
    found = runs.active(http.rt(), http.org_id(), agent_id=agent_id, background=background)
    return http.json_reply(200, [letta.run_json(r) for r in found])


@router.get("/runs/<run_id>")
def retrieve_run(run_id: RunId) -> Response[Any]:
    return http.json_reply(200, letta.run_json(runs.retrieve(http.rt(), http.org_id(), run_id)))


@router.delete("/runs/<run_id>")
def delete_run(run_id: RunId) -> Response[Any]:
    runs.delete(http.rt(), http.org_id(), run_id)
    return http.json_reply(200, None)


@router.post("/runs/<run_id>/stream")
def stream_run(
    run_id: RunId, req: Annotated[RetrieveStream | None, Body()] = None
) -> Response[Any]:
    """A background run's events after `starting_after`, each with its `seq_id`, read from
    the database and followed live until the run ends (or the stream's time does: then it
    ends without [DONE], and is asked again from the last `seq_id`)."""
    req = req or RetrieveStream()
    events = runs.follow(http.rt(), http.org_id(), run_id, ping=req.include_pings is not False)
    letta_sse = streaming.Letta(run_id, numbered=True, starting_after=req.starting_after)
    return http.stream_reply(letta_sse.frames(events))


@router.get("/runs/<run_id>/messages")
@paged(limit=100, order="asc")
def run_messages(
    run_id: RunId,
    *,
    page: Page,
) -> Response[Any]:
    found = runs.messages_of(
        http.rt(),
        http.org_id(),
        run_id,
        page=page,
    )
    return http.page_reply(letta.expand(found))


@router.get("/runs/<run_id>/steps")
@paged(limit=100, order="desc")
def run_steps(
    run_id: RunId,
    *,
    page: Page,
) -> Response[Any]:
    found = runs.steps_of(
        http.rt(),
        http.org_id(),
        run_id,
        page=page,
    )
    return http.json_reply(200, [letta.step_json(s) for s in found])


@router.get("/runs/<run_id>/usage")
def run_usage(run_id: RunId) -> Response[Any]:
    usage = runs.retrieve(http.rt(), http.org_id(), run_id).usage
    return http.json_reply(
        200,
        {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
            "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        },
    )


@router.get("/runs/<run_id>/metrics")
def run_metrics(run_id: RunId) -> Response[Any]:
    run, num_steps, tools_used = runs.metrics(http.rt(), http.org_id(), run_id)
    return http.json_reply(200, letta.run_metrics_json(run, num_steps, tools_used))


@router.get("/steps/")
@paged(limit=50, order="desc")
def list_steps(
    agent_id: str | None = None,
    run_id: str | None = None,
    *,
    page: Page,
) -> Response[Any]:
    found = runs.steps(
        http.rt(),
        http.org_id(),
        agent_id=agent_id,
        run_id=run_id,
        page=page,
    )
    return http.json_reply(200, [letta.step_json(s) for s in found])


@router.get("/steps/<step_id>")
def get_step(step_id: StepId) -> Response[Any]:
    return http.json_reply(200, letta.step_json(runs.step(http.rt(), http.org_id(), step_id)))


@router.get("/steps/<step_id>/messages")
@paged(limit=None, order="asc")
def step_messages(
    step_id: StepId,
    *,
    page: Page,
) -> Response[Any]:
    found = runs.step_messages(
        http.rt(),
        http.org_id(),
        step_id,
        page=page,
    )
    return http.json_reply(200, letta.expand(found))


@router.patch("/steps/<step_id>/feedback")
def step_feedback(step_id: StepId, req: Annotated[StepFeedback, Body()]) -> Response[Any]:
    step = runs.feedback(http.rt(), http.org_id(), step_id, req.feedback, req.tags)
    return http.json_reply(200, letta.step_json(step))


@router.patch("/steps/<step_id>/transaction/<transaction_id>")
def step_transaction(step_id: StepId, transaction_id: str) -> Response[Any]:
    step = runs.set_transaction(http.rt(), http.org_id(), step_id, transaction_id)
    return http.json_reply(200, letta.step_json(step))


@router.get("/steps/<step_id>/metrics")
def step_metrics(step_id: StepId) -> Response[Any]:
    step = runs.step(http.rt(), http.org_id(), step_id)
    return http.json_reply(200, letta.step_metrics_json(step))


@router.get("/steps/<step_id>/trace")
def step_trace(step_id: StepId) -> Response[Any]:
    """null unless CAIRN_PROVIDER_TRACES was on when the step ran (as Letta without telemetry)."""
    step, trace = runs.trace(http.rt(), http.org_id(), step_id)
    return http.json_reply(200, None if trace is None else letta.trace_json(step, trace))
