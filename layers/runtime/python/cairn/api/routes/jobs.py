"""Letta's jobs (/v1/jobs). In Letta 0.16.1 a job is a row of its jobs table: its message
batches (`job_type` batch) and, once, other background work (`job_type` job). The listings
show only the latter, of which Letta 0.16.1 makes none and Cairn neither: they answer an
empty page, as Letta's do. A batch is a job by its id (`job-<uuid4>`): read, cancelled and
deleted here as under /v1/messages/batches."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.params import After, Before, Order
from cairn.domain.ids import id_pattern
from cairn.services import batches

router = APIGatewayHttpRouter()
JobId = Annotated[str, Path(pattern=id_pattern("job"), description="The job id, `job-<uuid4>`")]
JobsLimit = Annotated[int | None, Query(ge=1, le=1000)]


@router.get("/jobs/")
def list_jobs(
    source_id: str | None = None,
    after: After = None,
    before: Before = None,
    limit: JobsLimit = 100,
    order: Order = "desc",
    order_by: Literal["created_at"] = "created_at",
    active: bool = False,
    ascending: bool = True,
) -> Response[Any]:
    return http.json_reply(200, [])  # no job of type `job` is ever made (module docstring)


@router.get("/jobs/active")
def list_active_jobs(
    source_id: str | None = None,
    after: After = None,
    before: Before = None,
    limit: JobsLimit = 50,
    ascending: bool = True,
) -> Response[Any]:
    return http.json_reply(200, [])


@router.get("/jobs/<job_id>")
def retrieve_job(job_id: JobId) -> Response[Any]:
    return http.json_reply(
        200, letta.batch_json(batches.retrieve(http.rt(), http.org_id(), job_id))
    )


@router.patch("/jobs/<job_id>/cancel")
def cancel_job(job_id: JobId) -> Response[Any]:
    rt, org = http.rt(), http.org_id()
    if batches.retrieve(rt, org, job_id).status != "running":
        return http.json_reply(200, False)  # as Letta: an ended job is not cancelled
    batches.cancel(rt, org, job_id)
    return http.json_reply(200, letta.batch_json(batches.retrieve(rt, org, job_id)))


@router.delete("/jobs/<job_id>")
def delete_job(job_id: JobId) -> Response[Any]:
    gone = batches.delete(http.rt(), http.org_id(), job_id)
    return http.json_reply(200, letta.batch_json(gone))
