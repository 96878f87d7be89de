"""Messages: send (sync, async, stream), list, cancel, capture."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from cairn.domain.agents import Agent
from cairn.domain.messages import (
    ApprovalDecision,
    ContentPart,
    Message,
    ReasoningContent,
    TextContent,
)
from cairn.domain.runs import RunOptions, embed_command
from cairn.errors import ConflictError, UnprocessableError, found
from cairn.run.backends import search as run_search
from cairn.run.driving import dispatch, sending, tasks
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services import images
from cairn.services.pages import Page
from cairn.services.requests import (
    CaptureRequest,
    LettaRequest,
    MessageCreate,
    MessageSearch,
    MessageUpdate,
    TextPart,
)
from cairn.services.requests.messages import ImagePart
from cairn.store import agents, messages, runs
from cairn.store import search as sql_search
from cairn.store.db import Connection

logger = logging.getLogger(__name__)
Sent = sending.Sent


def send(
    rt: Runtime, org: str, agent_id: str, req: LettaRequest, *, wait: bool, run_type: str
) -> Sent:
    """Start a run on the request's messages; with `wait`, run its first step here."""
    # A background stream's run outlives its client: its events can be read again.
    options = RunOptions(
        max_steps=req.max_steps,
        metadata={"run_type": run_type},
        background=req.background or not wait,
        coalesce=True,
    )
    return sending.send(rt, org, agent_id, inputs(rt, org, agent_id, req), options, wait=wait)


def summarize(rt: Runtime, org: str, agent_id: str) -> Sent:
    """Compact the agent's context now: a run of one compaction step (the oldest messages
    summarised as its compaction settings say), waited for within the sync budget."""
    options = RunOptions(max_steps=1, metadata={"run_type": "summarize"}, compact_only=True)
    return sending.send(rt, org, agent_id, [], options, wait=True)


def preview(rt: Runtime, org: str, agent_id: str, req: LettaRequest) -> dict[str, Any]:
    """The provider request the agent's next step would send for this request's messages."""
    return rt.engine.preview(org, agent_id, inputs(rt, org, agent_id, req))


def produced(rt: Runtime, sent: Sent) -> list[Message]:
    """What the run produced (its inputs left out), in order."""
    run, made = sent
    if made is None:
        with rt.db.connection() as conn:
            made = messages.list_for_agent(
                conn, run.organization_id, run.agent_id, run_id=run.id, order="asc", limit=1000
            )
    inputs = run.input_ids()
    return [m for m in made if m.id not in inputs]


def inputs(rt: Runtime, org: str, agent_id: str, req: LettaRequest) -> list[Message]:
    """The request's messages; the agent is read only for an approval (starting the run
    finds a missing agent in the same statement)."""
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
        with rt.db.connection() as conn:
            return [_approval(conn, agent_service.fetch(conn, org, agent_id), approvals[0])]
    return [
        Message(
            organization_id=org,
            agent_id=agent_id,
            role=item.role,
            content=_content(rt, item),
            name=item.name,
            otid=item.otid,
            sender_id=item.sender_id,
        )
        for item in items
    ]


def _content(rt: Runtime, item: MessageCreate) -> list[ContentPart]:
    """The message's parts in the order sent: texts, and images (a URL fetched now, kept as
    base64), within a message's count and total of images."""
    if isinstance(item.content, str):
        return [TextContent(text=item.text)]
    images.check_count(len(item.images))
    parts: list[ContentPart] = []
    total = 0
    for part in item.content or ():
        if isinstance(part, ImagePart):
            made = images.image_content(rt, part.source)
            total += images.size_of(made)
            images.check_total(total)
            parts.append(made)
        elif isinstance(part, TextPart) and part.text:
            parts.append(TextContent(text=part.text))
    return parts or [TextContent(text="")]


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


def history(
    rt: Runtime,
    org: str,
    agent_id: str,
    *,
    page: Page,
    include_err: bool,
) -> list[Message]:
    """A page of the agent's messages, shown oldest first whatever the order paged by."""
    with rt.db.connection() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
        rows = messages.list_for_agent(
            conn,
            org,
            agent.id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )
    if page.order == "desc":
        rows.reverse()  # the newest page, shown oldest first, as 0.16.1 does
    return rows if include_err else [m for m in rows if not m.is_err]


def cancel(rt: Runtime, org: str, agent_id: str, run_ids: list[str] | None) -> dict[str, str]:
    with rt.db.connection() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
        active = [r.id for r in runs.active_runs(conn, org, agent.id)]
    result: dict[str, str] = {}
    for run_id in run_ids or active:
        ended = rt.engine.fail_run(org, run_id, "cancelled", "cancelled by request")
        if ended is not None and ended.agent_id == agent.id:
            result[run_id] = ended.status
    if not run_ids:  # and the runs stopped at an approval stop waiting for it
        result.update(dict.fromkeys(tasks.cancel_waits(rt, org, agent.id), "cancelled"))
    # A cancelled run's approval request is closed (its calls denied as cancelled), else the
    # agent would answer PENDING_APPROVAL until someone denied them; Letta's cancel_run
    # writes the same denials (letta-ai/letta#3176 is its fix for conversations).
    of_run = None if not run_ids else _pending_run(rt, org, agent.id, run_ids)
    if not run_ids or of_run is not None:
        closed = tasks.deny_pending(
            rt, org, agent.id, CANCEL_REASON, of_run=of_run, kind="approval_cancel"
        )
        if closed is not None:
            result[closed[1]] = "cancelled"
    if result:  # runs waiting for this agent, or for their organization's share, may go
        dispatch.wake(rt.db, rt.queue, org, agent.id)
        dispatch.wake_organization(rt.db, rt.queue, org, rt.settings.org_max_runs)
    return result


CANCEL_REASON = "The run was cancelled"


def _pending_run(rt: Runtime, org: str, agent_id: str, run_ids: list[str]) -> str | None:
    """Which of `run_ids` waits for an approval of the agent, ended at requires_approval."""
    with rt.db.connection() as conn:
        found = [runs.get_run(conn, org, run_id) for run_id in run_ids]
    waiting = [
        r
        for r in found
        if r is not None
        and r.agent_id == agent_id
        and r.stop_reason in ("requires_approval", "cancelled")
    ]
    return waiting[0].id if waiting else None


def capture(rt: Runtime, org: str, agent_id: str, req: CaptureRequest) -> list[Message]:
    """Append messages to an agent's history without running it (Cairn's addition).

    They become recall memory (searchable, embedded like any other message) and, with
    `add_to_context`, join the context window. Sending the same message ids again is a no-op.
    """
    with rt.db.connection() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
    stamped = []
    for item in req.messages:
        fields: dict[str, Any] = {"created_at": item.created_at} if item.created_at else {}
        if item.id is not None:
            fields["id"] = item.id
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
        agent = agent_service.fetch(conn, org, agent_id)
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
    if not agent.message_embeddings:
        return rows
    try:
        rt.queue.publish(embed_command(org, agent.id, f"capture:{agent.id}:{rows[0].id}"))
    except Exception:  # stored already; the sweeper's backfill embeds them later
        logger.warning("could not queue embeddings for captured messages", exc_info=True)
    return rows


@dataclass
class Found:
    message: Message
    rrf_score: float
    vector_rank: int | None
    fts_rank: int | None


def search(rt: Runtime, org: str, req: MessageSearch) -> list[Found]:
    """Recall search: one agent's messages by full text and vector similarity fused, or
    every agent's by full text (their embeddings need not share a model)."""
    if not req.query:
        return []
    roles: list[str] | None = [str(r) for r in req.roles] if req.roles else None
    with rt.db.connection() as conn:
        if req.agent_id is None:
            hits = sql_search.organization_messages(
                conn,
                org,
                req.query,
                roles=roles,
                start=req.start_date,
                end=req.end_date,
                limit=req.limit,
            )
            return [Found(m, 1.0 / rank, None, rank) for m, rank in hits]
        agent = agent_service.fetch(conn, org, req.agent_id)
    embed = None
    if req.search_mode != "fts" and agent.message_embeddings:
        embed = run_search.embedding(rt.engine.embedder_of(agent), req.query)
    found = run_search.overlapped(
        rt.db,
        sql_search.message_search(
            org, agent.id, roles=roles, start=req.start_date, end=req.end_date
        ),
        req.query,
        embed,
        limit=req.limit,
        ranking=sql_search.Ranking(lexical=req.search_mode != "vector"),
        yielding=rt.yielding,
    )
    return [Found(m, hit.score, hit.vector_rank, hit.fts_rank) for m, hit in found]


def edit(rt: Runtime, org: str, agent_id: str, message_id: str, req: MessageUpdate) -> Message:
    """Change the text of one of the agent's messages (Letta's message PATCH)."""
    with rt.db.transaction() as conn:
        agent_service.fetch(conn, org, agent_id)
        message = messages.get(conn, org, message_id)
        theirs = message is not None and message.agent_id == agent_id
        message = found(message if theirs else None, "Message", message_id)
        edited = _edited(message, req)
        messages.edit(conn, edited)
    return edited


_ROLE_OF = {
    "system_message": "system",
    "user_message": "user",
    "assistant_message": "assistant",
    "reasoning_message": "assistant",
}


def _edited(message: Message, req: MessageUpdate) -> Message:
    if message.role != _ROLE_OF[req.message_type]:
        raise UnprocessableError(
            f"message_type: {req.message_type} cannot edit a message of role {message.role}"
        )
    if req.message_type == "reasoning_message":
        if req.reasoning is None:
            raise UnprocessableError("reasoning: required to edit a reasoning message")
        parts = [p for p in message.content if not isinstance(p, ReasoningContent)]
        return message.model_copy(
            update={"content": [ReasoningContent(reasoning=req.reasoning), *parts]}
        )
    if req.content is None:
        raise UnprocessableError("content: required")
    calls = message.tool_calls or []
    sends = [c for c in calls if c.function.name == "send_message"]
    if req.message_type == "assistant_message" and sends:
        # A memgpt_v2 reply is the `message` argument of its send_message call.
        arguments = json.dumps({"message": req.text}, ensure_ascii=False)
        new_calls = [
            c.model_copy(
                update={"function": c.function.model_copy(update={"arguments": arguments})}
            )
            if c is sends[0]
            else c
            for c in calls
        ]
        return message.model_copy(update={"tool_calls": new_calls})
    kept = [p for p in message.content if not isinstance(p, TextContent)]
    return message.model_copy(update={"content": [*kept, TextContent(text=req.text)]})


def list_all(
    rt: Runtime,
    org: str,
    *,
    page: Page,
) -> list[Message]:
    """A page of every agent's messages in the organization, in the order asked for; the
    cursors mean later / earlier *in that order* (Letta's list_all_messages), so the SDK's
    `after=<last id>` moves on in either order."""
    after, before = (page.before, page.after) if page.order == "desc" else (page.after, page.before)
    with rt.db.connection() as conn:
        return messages.list_for_agent(
            conn, org, None, after=after, before=before, limit=page.limit, order=page.order
        )
