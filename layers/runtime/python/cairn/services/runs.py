"""Runs and their messages, steps and usage."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cairn.domain.ids import is_id
from cairn.domain.messages import Message
from cairn.domain.runs import Run, Step
from cairn.errors import ConflictError, InvalidArgumentError, found
from cairn.run.driving import streaming as streams
from cairn.run.runtime import Runtime
from cairn.services.pages import EVERYTHING, Page, window
from cairn.store import messages, runs
from cairn.store import steps as step_rows
from cairn.store.db import Connection

ACTIVE = ["created", "running"]


def _fetch(conn: Connection, org: str, run_id: str) -> Run:
    if not is_id(run_id, "run"):  # Letta answers 400 here, not 422
        raise InvalidArgumentError(f"INVALID_ARGUMENT: Invalid run ID format: {run_id}")
    return found(runs.get_run(conn, org, run_id), "Run", run_id)


def list_runs(
    rt: Runtime,
    org: str,
    *,
    agent_ids: list[str] | None,
    statuses: list[str] | None,
    background: bool | None,
    stop_reason: str | None,
    active: bool,
    page: Page,
) -> list[Run]:
    with rt.db.connection() as conn:
        return runs.list_runs(
            conn,
            org,
            agent_ids=agent_ids or None,
            statuses=ACTIVE if active else statuses,
            background=background,
            stop_reason=stop_reason,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def retrieve(rt: Runtime, org: str, run_id: str) -> Run:
    with rt.db.connection() as conn:
        return _fetch(conn, org, run_id)


def delete(rt: Runtime, org: str, run_id: str) -> None:
    """Forget an ended run; its messages stay in the agent's history (recall memory)."""
    with rt.db.transaction() as conn:
        run = _fetch(conn, org, run_id)
        if not runs.delete_ended(conn, org, run.id):
            raise ConflictError(f"Run {run_id} is {run.status}: cancel it before deleting it")


def messages_of(
    rt: Runtime,
    org: str,
    run_id: str,
    *,
    page: Page,
) -> list[Message]:
    with rt.db.connection() as conn:
        run = _fetch(conn, org, run_id)
        return messages.list_for_agent(
            conn,
            org,
            run.agent_id,
            run_id=run.id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def follow(rt: Runtime, org: str, run_id: str, *, ping: bool) -> Iterator[streams.Event]:
    """A background run's events from its start, read from the database and followed until
    it ends or the stream's time does (a stream resumes from Postgres, not Redis)."""
    with rt.db.connection() as conn:
        run = _fetch(conn, org, run_id)
    if not run.background:
        raise InvalidArgumentError(
            "Run was not created in background mode, so it cannot be retrieved."
        )
    inputs = run.input_ids()
    return streams.follow(rt, org, run.id, inputs, streams.stream_budget(rt), ping=ping)


def steps_of(
    rt: Runtime,
    org: str,
    run_id: str,
    *,
    page: Page,
) -> list[Step]:
    with rt.db.connection() as conn:
        run = _fetch(conn, org, run_id)
        return step_rows.list_steps(
            conn,
            org,
            run.id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def active(rt: Runtime, org: str, *, agent_id: str | None, background: bool | None) -> list[Run]:
    with rt.db.connection() as conn:
        return runs.list_runs(
            conn,
            org,
            agent_ids=[agent_id] if agent_id else None,
            statuses=ACTIVE,
            background=background,
            limit=1000,
        )


def _step(conn: Connection, org: str, step_id: str) -> Step:
    return _found(step_rows.get_step(conn, org, step_id), step_id)


def _found(step: Step | None, step_id: str) -> Step:
    return found(step, "Step", step_id)
    return step


def steps(
    rt: Runtime,
    org: str,
    *,
    agent_id: str | None,
    run_id: str | None,
    page: Page,
) -> list[Step]:
    with rt.db.connection() as conn:
        return step_rows.list_steps(
            conn,
            org,
            run_id,
            agent_id=agent_id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def step(rt: Runtime, org: str, step_id: str) -> Step:
    with rt.db.connection() as conn:
        return _step(conn, org, step_id)


def step_messages(
    rt: Runtime,
    org: str,
    step_id: str,
    *,
    page: Page = EVERYTHING,
) -> list[Message]:
    with rt.db.connection() as conn:
        _step(conn, org, step_id)
        listed = messages.for_step(conn, org, step_id)
    return window(listed, page)


def feedback(
    rt: Runtime, org: str, step_id: str, value: str | None, tags: list[str] | None
) -> Step:
    with rt.db.connection() as conn:
        return _found(step_rows.set_feedback(conn, org, step_id, value, tags), step_id)


def set_transaction(rt: Runtime, org: str, step_id: str, tid: str) -> Step:
    with rt.db.connection() as conn:
        return _found(step_rows.set_tid(conn, org, step_id, tid), step_id)


def trace(rt: Runtime, org: str, step_id: str) -> tuple[Step, dict[str, Any] | None]:
    """The step and its provider trace (None unless CAIRN_PROVIDER_TRACES was on)."""
    with rt.db.connection() as conn:
        return _step(conn, org, step_id), step_rows.get_trace(conn, org, step_id)


def metrics(rt: Runtime, org: str, run_id: str) -> tuple[Run, int, list[str]]:
    """The run, its number of steps and the ids of the tools it called."""
    with rt.db.connection() as conn:
        run = _fetch(conn, org, run_id)
        return (run, *runs.run_metrics(conn, org, run.id))
