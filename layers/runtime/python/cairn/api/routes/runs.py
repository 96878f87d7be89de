"""Runs and their messages, steps and usage (contract §6)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.domain.runs import Run
from cairn.errors import NotFoundError, UnprocessableError
from cairn.store import messages, runs
from cairn.store.db import Connection

router = APIGatewayHttpRouter()


def _order(default: str) -> str:
    order = http.query("order", default) or default
    if order not in ("asc", "desc"):
        raise UnprocessableError("order: must be asc or desc")
    return order


def get_run(conn: Connection, run_id: str) -> Run:
    http.check_id("run", run_id, what="run_id")
    run = runs.get_run(conn, http.org_id(), run_id)
    if run is None:
        raise NotFoundError(f"Run with id '{run_id}' not found")
    return run


@router.get("/runs/")
def list_runs() -> Response[Any]:
    statuses = http.query_list("statuses")
    if http.query_bool("active", False):
        statuses = ["created", "running"]
    agent_id = http.query("agent_id") or next(iter(http.query_list("agent_ids")), None)
    with http.rt().db.connection() as conn:
        found = runs.list_runs(
            conn,
            http.org_id(),
            agent_id=agent_id,
            after=http.query("after"),
            before=http.query("before"),
            limit=http.query_int("limit", 100),
            order=_order("desc"),  # type: ignore[arg-type]
        )
    if statuses:
        found = [r for r in found if r.status in statuses]
    stop = http.query("stop_reason")
    if stop:
        found = [r for r in found if r.stop_reason == stop]
    return http.json_reply(200, [letta.run_json(r) for r in found])


@router.get("/runs/<run_id>")
def retrieve_run(run_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        return http.json_reply(200, letta.run_json(get_run(conn, run_id)))


@router.get("/runs/<run_id>/messages")
def run_messages(run_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        run = get_run(conn, run_id)
        found = messages.list_for_agent(
            conn,
            run.organization_id,
            run.agent_id,
            run_id=run.id,
            after=http.query("after"),
            before=http.query("before"),
            limit=http.query_int("limit", 100),
            order=_order("asc"),  # type: ignore[arg-type]
        )
    return http.json_reply(200, letta.expand(found))


@router.get("/runs/<run_id>/steps")
def run_steps(run_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        run = get_run(conn, run_id)
        found = runs.list_steps(
            conn,
            run.organization_id,
            run.id,
            after=http.query("after"),
            before=http.query("before"),
            limit=http.query_int("limit", 100),
            order=_order("desc"),  # type: ignore[arg-type]
        )
    return http.json_reply(200, [letta.step_json(s) for s in found])


@router.get("/runs/<run_id>/usage")
def run_usage(run_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        usage = get_run(conn, run_id).usage
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
