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
# The window each agent's job was last handed over in, by this process: the queue would drop
# the window's other jobs as duplicates, so they are neither built nor sent (on AWS, an SQS
# request a step saved). Bounded: emptied when full, which costs a duplicate send at most.
_handed_over: dict[str, int] = {}
HANDED_OVER_MAX = 4096


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
    backfill (one sweep). This process builds a window's job once (`_handed_over`): had its
    send failed, the backfill embeds what it would have."""
    if not cp.agent.message_embeddings or not any(m.search_text() for m in cp.new_messages):
        return []
    window = int(now.timestamp() // EMBED_WINDOW_SECONDS)
    if _handed_over.get(cp.agent.id) == window:
        return []
    if len(_handed_over) >= HANDED_OVER_MAX:
        _handed_over.clear()
    _handed_over[cp.agent.id] = window
    return [embed_command(org_id, cp.agent.id, f"embed:{cp.agent.id}:{window}", run_id=run_id)]
