"""What a checkpoint starts besides its continuation, written in its own transaction: an
approval's wait, a task's result, a group's next turn, what an edge starts when a run ends,
and the embedding of the new messages."""

from __future__ import annotations

from datetime import datetime

from cairn.domain.runs import (
    TERMINAL_RUN_STATUSES,
    OutboxCommand,
    approval_wait_command,
    embed_command,
    group_turn_command,
    task_result_command,
)
from cairn.run.ports import RunEnd
from cairn.store.checkpoints import Checkpoint

# A busy agent's messages are embedded by one job per window, not one per step.
EMBED_WINDOW_SECONDS = 30


def follow_ons(cp: Checkpoint, run_end: tuple[RunEnd, ...]) -> None:
    """What the checkpoint starts besides its continuation, written in the same transaction."""
    if cp.run.stop_reason == "requires_approval":
        cp.commands.append(approval_wait_command(cp.run))
    if cp.run.status in TERMINAL_RUN_STATUSES and cp.run.task_token:
        cp.commands.append(task_result_command(cp.run))
    ended_turn = cp.run.status == "completed" and cp.run.stop_reason != "requires_approval"
    cp.sleeptime_turn = ended_turn and cp.agent.enable_sleeptime
    if ended_turn and (next_turn := group_turn_command(cp.run)) is not None:
        cp.commands.append(next_turn)
    if cp.run.status in TERMINAL_RUN_STATUSES:
        cp.commands.extend(c for hook in run_end if (c := hook(cp.run)) is not None)


def embed_job(cp: Checkpoint, org_id: str, run_id: str, now: datetime) -> list[OutboxCommand]:
    """Embedding the agent's new messages, published with no outbox row: if that publish is
    lost, the sweeper's backfill embeds every message still without one (embedding_jobs).

    One job per agent per `EMBED_WINDOW_SECONDS`, not one per step: the embedding queue
    (FIFO, never the steps' queue) drops the window's other sends as duplicates, and the
    job embeds all the agent's messages still without a vector in one request. What a
    window's job finds already done waits for the next window's job or the sweeper's
    backfill (one sweep)."""
    if not cp.agent.message_embeddings or not any(m.search_text() for m in cp.new_messages):
        return []
    window = int(now.timestamp() // EMBED_WINDOW_SECONDS)
    return [embed_command(org_id, cp.agent.id, f"embed:{cp.agent.id}:{window}", run_id=run_id)]
