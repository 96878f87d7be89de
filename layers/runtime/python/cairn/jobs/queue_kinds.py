"""The background jobs' queue messages: an agent's embedding job and a file's processing,
what each does on the step queue and what its dead letter means. Registered at assembly."""

from __future__ import annotations

import time
from typing import Any, Literal

from cairn.domain.base import Value
from cairn.domain.runs import OutboxCommand, file_job_command
from cairn.jobs import file_jobs
from cairn.jobs.embedding_jobs import EmbeddingFailed, backfill, embed_agent
from cairn.run.driving.worker import poison
from cairn.run.runtime import QueueKind, Runtime


class EmbedMessage(Value):
    kind: Literal["embed"]
    organization_id: str
    agent_id: str


class FileJob(Value):
    kind: Literal["file_job"]
    organization_id: str
    file_id: str


def _embed(rt: Runtime, payload: dict[str, Any], _: OutboxCommand | None) -> str:
    try:
        written = embed_agent(rt.engine, payload["organization_id"], payload["agent_id"])
    except EmbeddingFailed as err:  # held back: delivering it again would only skip it
        return f"held: {err}"[:200]
    return f"embedded {written}"


def _embed_dead(rt: Runtime, _: dict[str, Any], body: str, receives: int) -> str:
    # Nothing waits on it: the sweeper's backfill embeds whatever is still missing.
    return poison(rt, "step-dlq", body, "embedding job failed on each delivery", receives)


def _file_job(rt: Runtime, payload: dict[str, Any], _: OutboxCommand | None) -> str:
    org, file_id = payload["organization_id"], payload["file_id"]
    assert rt.documents is not None, "the runtime has a document store (build_runtime)"
    status = file_jobs.process(rt.engine, org, file_id, rt.documents.get)
    if status == "more":  # out of this invocation's time: the next one goes on
        rt.queue.publish(
            file_job_command(
                org, file_id, attempt=int(time.time()), lanes=rt.settings.org_files_at_once
            )
        )
    return status


def _file_job_dead(rt: Runtime, payload: dict[str, Any], body: str, receives: int) -> str:
    reason = f"processing failed on each of {receives} deliveries; see the files function logs"
    file_jobs.fail(rt.engine, payload["organization_id"], payload["file_id"], reason)
    return "failed"


KINDS = {
    "embed": QueueKind(EmbedMessage, _embed, _embed_dead),
    "file_job": QueueKind(FileJob, _file_job, _file_job_dead),
}


def backfill_phase(rt: Runtime, errors: dict[str, str]) -> int:
    """The sweeper's phase for messages whose embedding job was lost or failed (jobs have no
    outbox row), or that were stored while no embedder was reachable; an agent whose
    messages could not be embedded is named in `errors`."""
    written, failed = backfill(rt.engine)
    for agent_id, why in failed.items():
        errors[f"embedded:{agent_id}"] = why
    return written
