"""Messages: send (sync, async, stream), list, reset, cancel (contract §3, §4)."""

from __future__ import annotations

import json
import logging
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.requests import CaptureRequest, LettaRequest, MessageCreate
from cairn.api.routes.agents import agent_state, get_agent
from cairn.domain.agents import Agent
from cairn.domain.base import utc_now
from cairn.domain.messages import ApprovalDecision, Message, TextContent
from cairn.domain.runs import TERMINAL_RUN_STATUSES, Run, embed_command
from cairn.errors import ConflictError, UnprocessableError
from cairn.memory.initial import initial_messages
from cairn.memory.render import MemoryMetadata, compile_system_message, render_memory_section
from cairn.orchestration import dispatch, sending, tasks
from cairn.store import agents, blocks, messages, runs
from cairn.store.db import Connection
from cairn.tools.rules import ToolRulesSolver

router = APIGatewayHttpRouter()
logger = logging.getLogger(__name__)


def _inputs(org: str, agent_id: str, req: LettaRequest) -> list[Message]:
    """The request's messages; the agent is read only for an approval (starting the run
    finds a missing agent in the same statement)."""
    http.check_id("agent", agent_id, what="agent_id")
    if (req.messages is None) == (req.input is None):
        raise UnprocessableError("Exactly one of `messages` or `input` must be given")
    if req.input is not None:
        items = [MessageCreate(role="user", content=req.input)]
    else:
        items = list(req.messages or [])
    if not items:
        raise UnprocessableError("Messages must not be empty")
    approvals = [m for m in items if m.type == "approval"]
    if approvals and len(items) > 1:
        raise UnprocessableError("An approval must be sent on its own")
    if approvals:
        with http.rt().db.connection() as conn:
            return [_approval(conn, get_agent(conn, org, agent_id), approvals[0])]
    return [
        Message(
            organization_id=org,
            agent_id=agent_id,
            role=item.role,
            content=[TextContent(text=item.text)],
            name=item.name,
            otid=item.otid,
            sender_id=item.sender_id,
        )
        for item in items
    ]


def _approval(conn: Connection, agent: Agent, item: MessageCreate) -> Message:
    decisions = list(item.approvals or ())
    if not decisions and item.approval_request_id:
        # The legacy form names the approval request; it answers every call it carries.
        pending = messages.get_many(conn, agent.organization_id, agent.message_ids[-1:])
        calls = pending[0].tool_calls or [] if pending and pending[0].role == "approval" else []
        wanted = item.approval_request_id
        ids = (
            [c.id for c in calls]
            if wanted in (pending[0].id if pending else None, *(c.id for c in calls))
            else [wanted]
        )
        decisions = [
            ApprovalDecision(tool_call_id=i, approve=item.approve, reason=item.reason) for i in ids
        ]
    if not decisions:
        raise UnprocessableError("approvals: an approval needs at least one decision")
    return Message(
        organization_id=agent.organization_id,
        agent_id=agent.id,
        role="approval",
        approvals=decisions,
        approve=item.approve,
        approval_request_id=item.approval_request_id,
        denial_reason=item.reason,
    )


def _start(
    agent_id: str, *, wait: bool, run_type: str, stream_path: bool = False
) -> tuple[sending.Sent, LettaRequest]:
    req: LettaRequest = http.body(LettaRequest)
    streaming = stream_path or req.streaming
    if (
        wait
        and not streaming
        and (req.stream_tokens or req.background or req.include_pings is False)
    ):
        raise UnprocessableError(
            "Streaming options set without streaming enabled. Set streaming=true or use the "
            "/messages/stream endpoint."
        )
    rt = http.rt()
    org = http.org_id()
    inputs = _inputs(org, agent_id, req)
    sent = sending.send(
        rt,
        org,
        agent_id,
        inputs,
        max_steps=req.max_steps,
        wait=wait,
        metadata={"run_type": run_type},
    )
    return sent, req


def _response(sent: sending.Sent, req: LettaRequest) -> dict[str, Any]:
    run, produced = sent
    if produced is None:
        with http.rt().db.connection() as conn:
            produced = messages.list_for_agent(
                conn, run.organization_id, run.agent_id, run_id=run.id, order="asc", limit=1000
            )
    inputs = {m["id"] for m in run.request_config.get("input") or ()}
    shown = letta.expand(
        [m for m in produced if m.id not in inputs], use_assistant_message=req.use_assistant_message
    )
    if req.include_return_message_types:
        shown = [m for m in shown if m["message_type"] in req.include_return_message_types]
    return {
        "messages": shown,
        "stop_reason": {"message_type": "stop_reason", "stop_reason": run.stop_reason},
        "usage": letta.usage_json(run),
    }


@router.post("/agents/<agent_id>/messages")
def send_message(agent_id: str) -> Response[Any]:
    sent, req = _start(agent_id, wait=True, run_type="send_message")
    run = sent.run
    if run.status not in TERMINAL_RUN_STATUSES:
        # Past the budget: answer with the run to poll (README, "Sending messages").
        return http.json_reply(202, letta.run_json(run))
    if run.stop_reason == "llm_api_error":
        return _llm_error(run)
    if req.streaming:
        return _sse(sent, req)
    return http.json_reply(200, _response(sent, req))


def _llm_error(run: Run) -> Response[Any]:
    error = run.error or {}
    kind = str(error.get("type") or "llm_error")
    message = str(error.get("message") or "the model provider failed")
    return http.llm_error_reply(kind, message, run_id=run.id)


@router.post("/agents/<agent_id>/messages/stream")
def stream_message(agent_id: str) -> Response[Any]:
    sent, req = _start(agent_id, wait=True, run_type="send_message_streaming", stream_path=True)
    return _sse(sent, req)


def _sse(sent: sending.Sent, req: LettaRequest) -> Response[Any]:
    """The whole turn as one SSE body: API Gateway HTTP APIs do not stream responses."""
    result = _response(sent, req)
    events = [*result["messages"], result["stop_reason"], result["usage"]]
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return Response(status_code=200, content_type="text/event-stream; charset=utf-8", body=text)


@router.post("/agents/<agent_id>/messages/async")
def send_message_async(agent_id: str) -> Response[Any]:
    sent, _ = _start(agent_id, wait=False, run_type="send_message_async")
    return http.json_reply(200, letta.run_json(sent.run))


@router.get("/agents/<agent_id>/messages")
def list_messages(agent_id: str) -> Response[Any]:
    org = http.org_id()
    order = http.query("order", "desc")
    if order not in ("asc", "desc"):
        raise UnprocessableError("order: must be asc or desc")
    with http.rt().db.connection() as conn:
        agent = get_agent(conn, org, agent_id)
        rows = messages.list_for_agent(
            conn,
            org,
            agent.id,
            after=http.query("after"),
            before=http.query("before"),
            limit=http.query_int("limit", 100),
            order=order,  # type: ignore[arg-type]
        )
    if order == "desc":
        rows.reverse()  # the newest page, shown oldest first, as 0.16.1 does
    if not http.query_bool("include_err", False):
        rows = [m for m in rows if not m.is_err]
    use_assistant = http.query_bool("use_assistant_message", True)
    return http.json_reply(200, letta.expand(rows, use_assistant_message=use_assistant))


@router.patch("/agents/<agent_id>/reset-messages")
def reset_messages(agent_id: str) -> Response[Any]:
    raw = http.current().body
    add_defaults = bool(json.loads(raw).get("add_default_initial_messages")) if raw else False
    org = http.org_id()
    now = utc_now()
    with http.rt().db.transaction() as conn:
        agent = get_agent(conn, org, agent_id)
        current = blocks.for_agent(conn, org, agent.id)
        section = render_memory_section(
            current,
            agent_type=agent.agent_type,
            provider=agent.llm_config.model_endpoint_type,
            tool_rule_lines=ToolRulesSolver.of(agent.tool_rules).prompt_lines(),
        )
        system = compile_system_message(
            agent.system,
            section,
            MemoryMetadata(
                now=now,
                timezone=agent.timezone,
                recall_count=messages.count_for_agent(conn, org, agent.id),
            ),
        )
        fresh = initial_messages(agent, system, now=now)
        if not add_defaults:
            fresh = fresh[:1]
        stored = messages.insert(conn, fresh)
        agent = agents.update(
            conn,
            agent.model_copy(update={"message_ids": [m.id for m in stored]}),
            expected_version=agent.version,
        )
        if http.sdk_1x():
            return http.json_reply(200, None)
        return http.json_reply(200, agent_state(conn, agent))


@router.post("/agents/<agent_id>/messages/cancel")
def cancel(agent_id: str) -> Response[Any]:
    raw = http.current().body
    wanted = (json.loads(raw) or {}).get("run_ids") if raw else None
    rt = http.rt()
    org = http.org_id()
    with rt.db.connection() as conn:
        agent = get_agent(conn, org, agent_id)
        active = [r.id for r in runs.active_runs(conn, org, agent.id)]
    result = {}
    for run_id in wanted or active:
        ended = rt.engine.fail_run(org, run_id, "cancelled", "cancelled by request")
        if ended is not None and ended.agent_id == agent.id:
            result[run_id] = ended.status
    if not wanted:  # and the runs stopped at an approval stop waiting for it
        result.update(dict.fromkeys(tasks.cancel_waits(rt, org, agent.id), "cancelled"))
    if result:
        dispatch.wake(rt.db, rt.queue, org, agent.id)  # runs waiting for this agent may go
    return http.json_reply(200, result)


@router.post("/agents/<agent_id>/messages/capture")
def capture(agent_id: str) -> Response[Any]:
    """Append messages to an agent's history without running it (Cairn's addition).

    They become recall memory (searchable, embedded like any other message) and, with
    `add_to_context`, join the context window. Sending the same message ids again is a no-op.
    """
    req: CaptureRequest = http.body(CaptureRequest)
    rt = http.rt()
    org = http.org_id()
    with rt.db.connection() as conn:
        agent = get_agent(conn, org, agent_id)
    stamped = []
    for item in req.messages:
        fields: dict[str, Any] = {"created_at": item.created_at} if item.created_at else {}
        if item.id is not None:
            fields["id"] = http.check_id("message", item.id, what="messages.id")
        stamped.append(
            Message(
                organization_id=org,
                agent_id=agent.id,
                role=item.role,
                name=item.name,
                otid=item.otid,
                content=[TextContent(text=item.text)],
                **fields,
            )
        )
    with rt.db.transaction() as conn:
        agent = get_agent(conn, org, agent_id)
        stored = messages.insert(conn, stamped)
        if any(
            m.agent_id != agent.id for m in messages.get_many(conn, org, [m.id for m in stored])
        ):
            raise ConflictError("messages.id: an id belongs to another agent's message")
        if req.add_to_context:
            if not agents.lease_free(conn, org, agent.id):
                raise ConflictError("The agent is running: add to its context when the run ends")
            new_ids = [m.id for m in stored if m.id not in agent.message_ids]
            agents.update(
                conn,
                agent.model_copy(update={"message_ids": [*agent.message_ids, *new_ids]}),
                expected_version=agent.version,
            )
        rows = messages.get_many(conn, org, [m.id for m in stored])
    try:
        rt.queue.publish(embed_command(org, agent.id, f"capture:{agent.id}:{rows[0].id}"))
    except Exception:  # stored already; the sweeper's backfill embeds them later
        logger.warning("could not queue embeddings for captured messages", exc_info=True)
    return http.json_reply(200, letta.expand(rows))
