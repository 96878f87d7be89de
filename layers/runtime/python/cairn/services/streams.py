"""A streamed send, the request's side: its inputs and options from Letta's request; the run
itself streams in `run/driving/streaming.py`."""

from __future__ import annotations

from cairn.domain.runs import RunOptions
from cairn.run.driving import streaming
from cairn.run.driving.streaming import Ended, Event, Failed, Piece, Ping, Stored
from cairn.run.runtime import Runtime
from cairn.services.messages import inputs
from cairn.services.requests import LettaRequest


def send(
    rt: Runtime, org: str, agent_id: str, req: LettaRequest, *, run_type: str
) -> streaming.Streamed:
    options = RunOptions(
        max_steps=req.max_steps,
        metadata={"run_type": run_type},
        background=req.background,
        coalesce=True,
    )
    return streaming.send(
        rt,
        org,
        agent_id,
        inputs(rt, org, agent_id, req),
        options,
        tokens=req.stream_tokens,
        ping=req.include_pings is not False,
    )


# The events a stream is read as, for the API's writers (Letta's SSE, OpenAI's chunks).
__all__ = ["Ended", "Event", "Failed", "Piece", "Ping", "Stored", "send"]
