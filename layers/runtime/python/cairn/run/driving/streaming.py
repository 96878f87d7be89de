"""Streamed runs: a turn's events as they happen, and a run's events read again (the
request's side, its inputs and options, is `services/streams.py`).

A streamed send runs its turn's steps on a thread of this process (as a sync send does in
the caller), while the reader takes what the steps make from a queue: the model's answer
piece by piece, each step's messages once committed, pings while nothing comes. If the
reader goes away, the steps after the current one go on the queue, as they would past the
budget, and the run ends in the background. A run whose steps went on the queue is
followed from the database until it ends: a stream needs no Redis.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from cairn.domain.messages import Message
from cairn.domain.runs import TERMINAL_RUN_STATUSES, Run, RunOptions, Usage
from cairn.llm import deadline
from cairn.llm.types import Delta, LLMError
from cairn.run.driving import sending
from cairn.run.driving.lifecycle import StartedRun
from cairn.run.runtime import Runtime
from cairn.store import messages, runs

logger = logging.getLogger(__name__)

# Following a run from the database: the first look soon, then no more than twice a second.
FIRST_LOOK_SECONDS, MAX_LOOK_SECONDS = 0.05, 0.5


class Piece(NamedTuple):
    """A piece of the model's answer, with the id of the message it will be stored in."""

    message_id: str
    delta: Delta


class Stored(NamedTuple):
    """What a step stored, once committed (the request's own messages left out)."""

    messages: list[Message]


class Ping(NamedTuple):
    pass


class Failed(NamedTuple):
    kind: str  # Letta's error_type: llm_error | internal_error
    message: str


class Ended(NamedTuple):
    """The run as the stream leaves it: ended, or still going (its steps on the queue)
    when the stream's time ran out; `usage` when the stream's is not the run's own (a
    group's turns)."""

    run: Run
    usage: Usage | None = None


Event = Piece | Stored | Ping | Failed | Ended


class Streamed(NamedTuple):
    run: Run  # as it started
    events: Iterator[Event]


class _Relay:
    """The listener the steps report to (sending.Listener), read by the stream."""

    def __init__(self, *, tokens: bool) -> None:
        self.tokens = tokens
        self.events: queue.Queue[Piece | Stored | Failed | None] = queue.Queue()
        self.gone = threading.Event()
        self.run: Run | None = None

    def delta(self, message_id: str, delta: Delta) -> None:
        self.events.put(Piece(message_id, delta))

    def stored(self, made: Sequence[Message]) -> None:
        self.events.put(Stored(list(made)))

    def present(self) -> bool:
        return not self.gone.is_set()


def stream_budget(rt: Runtime) -> float:
    """The stream's time: its setting, or less if the invocation ends sooner."""
    left = deadline.seconds_left()
    limit = rt.settings.stream_budget_seconds
    return limit if left is None else min(limit, max(left, 0.0))


def send(
    rt: Runtime,
    org: str,
    agent_id: str,
    inputs: list[Message],
    options: RunOptions,
    *,
    tokens: bool,
    ping: bool,
) -> Streamed:
    """Start the run now (a bad request or a busy agent is an error before any event) and
    its steps on a thread; the events come as the returned iterator is read."""
    started = sending.begin(rt, org, agent_id, inputs, options, wait=True)
    budget = stream_budget(rt)
    if started.joined:  # its turn runs for the send it joined: read it from the database
        shown = inputs_of(started.run)
        return Streamed(started.run, follow(rt, org, started.run.id, shown, budget, ping=ping))
    ends_at = time.monotonic() + budget
    relay = _Relay(tokens=tokens)
    worker = threading.Thread(
        target=contextvars.copy_context().run,
        args=(_drive, rt, org, agent_id, started, budget, relay),
        name=f"stream-{started.run.id}",
        daemon=True,
    )
    worker.start()
    return Streamed(started.run, _read(rt, org, started, relay, ends_at, ping=ping))


def _drive(
    rt: Runtime, org: str, agent_id: str, started: StartedRun, budget: float, relay: _Relay
) -> None:
    try:
        relay.run = sending.drive(rt, org, agent_id, started, budget, relay).run
    except LLMError as err:  # the run failed already (sending._step_here)
        relay.events.put(Failed("llm_error", str(err)))
    except Exception as err:
        # The step goes to a worker again (sending._step_here); this stream ends here.
        logger.exception("streamed step of run %s failed", started.run.id)
        relay.events.put(Failed("internal_error", f"{type(err).__name__}: {err}"))
    finally:
        relay.events.put(None)


def _read(
    rt: Runtime, org: str, started: StartedRun, relay: _Relay, ends_at: float, *, ping: bool
) -> Iterator[Event]:
    run = started.run
    shown = inputs_of(run)
    failed: Failed | None = None
    ping_every = rt.settings.stream_ping_seconds
    try:
        while True:
            try:
                item = relay.events.get(timeout=ping_every)
            except queue.Empty:
                if ping:
                    yield Ping()
                continue
            if item is None:
                break
            if isinstance(item, Failed):
                failed = item
            elif isinstance(item, Stored):
                fresh = [m for m in item.messages if m.id not in shown]
                shown.update(m.id for m in item.messages)
                if fresh:
                    yield Stored(fresh)
            else:
                yield item
        if failed is not None:
            yield failed
            yield Ended(_current(rt, org, run.id))
            return
        last = relay.run or run
        if last.status in TERMINAL_RUN_STATUSES:
            yield Ended(last)
            return
        # The rest of the turn runs on the queue: read it from the database.
        yield from follow(rt, org, run.id, shown, ends_at - time.monotonic(), ping=ping)
    finally:
        relay.gone.set()  # a reader that left: the steps after this one go to the queue


def inputs_of(run: Run) -> set[str]:
    """The ids of the messages the run was given: a stream shows what the run made."""
    return run.input_ids()


def follow(
    rt: Runtime, org: str, run_id: str, shown: set[str], budget: float, *, ping: bool
) -> Iterator[Event]:
    """What the run stores from now on, read from the database as it is committed, until
    it ends or the budget does (the last event is Ended, with the run as it then was)."""
    ends_at = time.monotonic() + budget
    interval, quiet_since = FIRST_LOOK_SECONDS, time.monotonic()
    after: str | None = None
    while True:
        with rt.db.connection() as conn:
            run = runs.get_run(conn, org, run_id)
            assert run is not None
            made = messages.list_for_agent(
                conn, org, run.agent_id, run_id=run_id, after=after, order="asc", limit=1000
            )
        fresh = [m for m in made if m.id not in shown]
        shown.update(m.id for m in made)
        after = made[-1].id if made else after
        if fresh:
            quiet_since, interval = time.monotonic(), FIRST_LOOK_SECONDS
            yield Stored(fresh)
        if run.status in TERMINAL_RUN_STATUSES or time.monotonic() >= ends_at:
            yield Ended(run)
            return
        if ping and time.monotonic() - quiet_since >= rt.settings.stream_ping_seconds:
            quiet_since = time.monotonic()
            yield Ping()
        with rt.yielding():
            time.sleep(min(interval, max(ends_at - time.monotonic(), 0)))
        interval = min(interval * 2, MAX_LOOK_SECONDS)


def _current(rt: Runtime, org: str, run_id: str) -> Run:
    with rt.db.connection() as conn:
        run = runs.get_run(conn, org, run_id)
    assert run is not None
    return run
