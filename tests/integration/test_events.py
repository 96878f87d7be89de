"""Every sample event in events/ runs through its real handler without a server error."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.local.inline import InlineStepQueue
from cairn.adapters.local.lambdas import invoke
from cairn.adapters.local.stepfunctions import definitions
from cairn.assembly.build import build_runtime, use_runtime
from cairn.config import Settings
from cairn.domain import Organization, User
from cairn.local.invoke import substitute
from cairn.run.sleeptime import provision_sleeptime
from cairn.store import tenancy
from cairn.store.db import Database
from tests.integration.engine_harness import NOW, make_agent

EVENTS = Path(__file__).resolve().parents[2] / "events"
API_EVENTS = sorted((EVENTS / "api").glob("*.json"))


def test_every_handler_has_sample_events() -> None:
    functions = {p.parent.name for p in (EVENTS.parent / "functions").glob("*/handler.py")}
    with_events = {p.name for p in EVENTS.iterdir() if any(p.glob("*.json"))}
    assert functions <= with_events
    for path in EVENTS.rglob("*.json"):
        json.loads(path.read_text())


def run_sample(db: Database, function: str, path: Path) -> Any:
    """The sample event through its function's handler, for a fresh organization and agent,
    with a model nobody answers."""
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="samples"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="ada"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="samples")
    rt = build_runtime(
        Settings(openai_api_key="k", openai_base_url="http://127.0.0.1:9/v1", llm_max_retries=0),
        db=db,
    )
    use_runtime(rt)
    try:
        agent = make_agent(db, org)
        event = substitute(path.read_text(), {"CAIRN_API_KEY": key, "AGENT_ID": agent.id})
        reply = invoke(function, event)
        if function == "stream":  # read while the runtime is there
            reply = (reply, b"".join(reply.body).decode())
        return reply
    finally:
        assert isinstance(rt.queue.steps, InlineStepQueue)
        rt.queue.steps.close()
        use_runtime(None)


@pytest.mark.parametrize("path", API_EVENTS, ids=lambda p: p.stem)
def test_api_sample_events_answer_without_a_server_error(db: Database, path: Path) -> None:
    response = run_sample(db, "api", path)
    # sends reach an unreachable model: Letta answers 502, never 500
    assert response["statusCode"] in (200, 400, 404, 409, 422, 502), response["body"]


@pytest.mark.parametrize("path", sorted((EVENTS / "stream").glob("*.json")), ids=lambda p: p.stem)
def test_stream_sample_events_stream_through_their_handler(db: Database, path: Path) -> None:
    reply, body = run_sample(db, "stream", path)
    assert reply.head["statusCode"] == 200, body
    if reply.streamed:  # the model is unreachable: Letta's error event, then [DONE]
        assert "event: error" in body and body.endswith("data: [DONE]\n\n")
    else:
        assert json.loads(body)["status"] == "ok"


WORKFLOW_EVENTS = sorted(
    [*(EVENTS / "approval").glob("*.json"), *(EVENTS / "sleeptime").glob("*.json")]
)


@cache
def task_payloads() -> dict[tuple[str, str], set[str]]:
    """(function, action) -> the payload keys each Task state of the deployed ASL sends."""
    found: dict[tuple[str, str], set[str]] = {}

    def walk(states: dict[str, Any]) -> None:
        for state in states.values():
            if "ItemProcessor" in state:
                walk(state["ItemProcessor"]["States"])
            if state["Type"] != "Task":
                continue
            params = state["Parameters"].get("Payload", state["Parameters"])
            function = (state["Parameters"].get("FunctionName") or state["Resource"]).split("-")[-1]
            found[(function, params["action"])] = {k.removesuffix(".$") for k in params}

    asl = definitions(
        approval_timeout_seconds=60, sleeptime_run_timeout_seconds=60, retry_seconds=1
    )
    for definition in asl.values():
        walk(json.loads(definition)["States"])
    return found


@pytest.mark.parametrize("path", WORKFLOW_EVENTS, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_workflow_sample_events_are_what_the_state_machines_send(db: Database, path: Path) -> None:
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="samples"))
    rt = build_runtime(Settings(openai_api_key="k", openai_base_url="http://127.0.0.1:9/v1"), db=db)
    use_runtime(rt)
    try:
        primary = make_agent(db, org, enable_sleeptime=True)
        group = provision_sleeptime(db, primary, now=NOW)
        values = {
            "ORGANIZATION_ID": org.id,
            "AGENT_ID": group.agent_ids[0],
            "GROUP_ID": group.id,
            "RUN_ID": "run-unknown",
            "MESSAGE_ID": primary.message_ids[-1],
        }
        event = substitute(path.read_text(), values)
        assert set(event) == task_payloads()[(path.parent.name, event["action"])]
        result = invoke(path.parent.name, event)
    finally:
        rt.queue.steps.close()  # type: ignore[attr-defined]
        use_runtime(None)
    assert isinstance(result, dict)
