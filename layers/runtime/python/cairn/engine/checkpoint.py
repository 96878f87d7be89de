"""The checkpoint: everything a step produced, written in one transaction or not at all."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from cairn.domain.agents import Agent
from cairn.domain.blocks import Block
from cairn.domain.messages import Message
from cairn.domain.passages import Archive, Passage
from cairn.domain.runs import OutboxCommand, Run, Step
from cairn.store import agents, archives, blocks, messages, outbox, runs
from cairn.store.db import Database


class AlreadyCommitted(Exception):
    """Another delivery of this step committed first; this one's work is discarded."""


@dataclass
class Checkpoint:
    agent: Agent  # as loaded; its version is the one the write must still find
    run: Run  # with status, stop reason and usage as they stand after this step
    step: Step
    new_messages: list[Message] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    system_rewrite: Message | None = None
    created_blocks: list[Block] = field(default_factory=list)
    updated_blocks: list[Block] = field(default_factory=list)  # version = the one read
    deleted_blocks: list[Block] = field(default_factory=list)
    new_archive: Archive | None = None
    passages: list[Passage] = field(default_factory=list)
    next_command: OutboxCommand | None = None
    context_tokens: int | None = None
    context_tokens_upto: int | None = None


def commit(db: Database, cp: Checkpoint, *, now: datetime) -> OutboxCommand | None:
    """Write the checkpoint; returns the continuation to publish once committed.

    Raises AlreadyCommitted for a duplicate delivery and VersionConflictError when the agent
    or a block changed since the step read it (the caller retries from fresh state).
    """
    org, agent_id = cp.agent.organization_id, cp.agent.id
    with db.transaction() as conn:
        if runs.record_step(conn, cp.step) is None:
            raise AlreadyCommitted(f"{cp.run.id} step {cp.step.step_index}")
        stored_run = runs.get_run(conn, org, cp.run.id)
        cancelled = stored_run is not None and stored_run.status == "cancelled"
        messages.insert(conn, cp.new_messages)
        if cp.system_rewrite is not None:
            messages.rewrite_content(conn, cp.system_rewrite)
        for block in cp.created_blocks:
            blocks.create(conn, block, actor_type="agent", actor_id=agent_id)
            blocks.attach(conn, org, agent_id, block.id)
        for block in cp.updated_blocks:
            blocks.update(
                conn, block, expected_version=block.version, actor_type="agent", actor_id=agent_id
            )
        for block in cp.deleted_blocks:
            blocks.detach(conn, org, agent_id, block.id)
            if not blocks.agent_ids(conn, org, block.id):
                blocks.delete(conn, org, block.id)
        if cp.new_archive is not None:
            archives.create_archive(conn, cp.new_archive)
            archives.attach_archive(conn, org, cp.new_archive.id, agent_id)
        for passage in cp.passages:
            archives.insert_passage(conn, passage)
        run = cp.run
        if cancelled:
            # A cancel that landed while the step ran wins: keep the work, go no further.
            run = run.model_copy(
                update={"status": "cancelled", "stop_reason": "cancelled", "completed_at": now}
            )
        runs.update_run(conn, run)
        ended = run.status in ("completed", "failed", "cancelled")
        agent = cp.agent.model_copy(
            update={
                "message_ids": cp.message_ids,
                "context_tokens": cp.context_tokens,
                "context_tokens_upto": cp.context_tokens_upto,
                **(
                    {"last_stop_reason": run.stop_reason, "last_run_completion": now}
                    if ended
                    else {}
                ),
            }
        )
        agents.update(conn, agent, expected_version=cp.agent.version)
        command = None
        if cp.next_command is not None and not ended:
            command = outbox.add(conn, cp.next_command) or outbox.by_dedup_key(
                conn, org, cp.next_command.dedup_key
            )
        if ended:
            agents.release_lease(conn, org, agent_id, run.id)
    return command
