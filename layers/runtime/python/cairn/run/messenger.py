"""Letta's multi-agent tools, the sending side (agent_messages.py says how
they work): the queued start of an agent's run on another agent's async message, and the
Messenger that runs an agent's turn for a sender waiting on its reply."""

from __future__ import annotations

import logging
import time
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from cairn.domain.messages import Message
from cairn.domain.runs import TERMINAL_RUN_STATUSES, RunOptions
from cairn.errors import CairnError, NotFoundError
from cairn.llm.types import LLMError
from cairn.run import agent_messages, lifecycle, sending
from cairn.run.agent_messages import Reply
from cairn.run.dispatch import publish_and_mark
from cairn.run.runtime import Runtime
from cairn.store import messages, runs
from cairn.store.db import DuplicateKey

logger = logging.getLogger(__name__)


def deliver(rt: Runtime, payload: dict[str, Any]) -> str:
    """Start the run of an async message, once: a redelivery finds the run it started."""
    org, agent_id, run_id = payload["organization_id"], payload["agent_id"], payload["run_id"]
    with rt.db.connection() as conn:
        if runs.get_run(conn, org, run_id) is not None:
            return "already delivered"
    message = agent_messages.incoming(org, agent_id, payload["text"], payload["sender_name"])
    meta = agent_messages.metadata(payload["sender_id"], payload["sender_run_id"])
    options = RunOptions(background=True, run_id=run_id, metadata=meta)
    try:
        started = lifecycle.start_run(
            rt.db, org, agent_id, [message], options, org_cap=rt.settings.org_max_runs
        )
    except DuplicateKey:  # a delivery beside this one started it a moment ago
        return "already delivered"
    except CairnError as err:  # deleted since, or waiting for an approval: it cannot take it
        logger.warning(
            "message from %s to %s not delivered: %s", payload["sender_id"], agent_id, err
        )
        return "not delivered"
    publish_and_mark(rt.db, rt.queue, started.command)
    return "delivered"


@dataclass
class Messenger:
    """Runs an agent's turn here for a sender that waits (the first steps in this process,
    as a sync send runs them; the rest from the queue) and reads what it said."""

    rt: Runtime

    def ask(
        self,
        org_id: str,
        agent_id: str,
        inputs: list[Message],
        *,
        run_id: str,
        metadata: dict[str, Any],
        budget_seconds: float,
    ) -> Reply:
        rt, until = self.rt, time.monotonic() + budget_seconds
        with rt.db.connection() as conn:
            run = runs.get_run(conn, org_id, run_id)
        if run is None:  # else the sender's step came again: wait for the run it started
            options = RunOptions(background=False, run_id=run_id, metadata=metadata)
            try:
                started = sending.begin(rt, org_id, agent_id, inputs, options, wait=True)
            except DuplicateKey:  # started beside this one: wait for it below
                started = None
            except CairnError as err:
                kind = "NoResultFound" if isinstance(err, NotFoundError) else type(err).__name__
                return Reply(agent_id, None, [], str(err), kind)
            if started is not None:
                with suppress(LLMError):  # the run has failed: read as it ended, below
                    run = sending.drive(rt, org_id, agent_id, started, budget_seconds).run
        if run is None or run.status not in TERMINAL_RUN_STATUSES:
            run = sending.wait_for(rt, org_id, run_id, max(until - time.monotonic(), 0.0))
        with rt.db.connection() as conn:
            said = messages.for_runs(conn, org_id, [run_id])
        return Reply(agent_id, run, said)
