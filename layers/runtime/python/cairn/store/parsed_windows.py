"""The context windows this process has parsed, kept between an agent's steps.

A step's claim reads the agent's whole window (store/claim.py), and a `letta_v1_agent`
keeps every message until its window fills: by its 50th message a step read about 110
messages, each made into JSON by PostgreSQL and parsed here, and both grew with the window.

So the claim is told what this process holds of the agent's window, and reads only what it
lacks:

- **Only what was appended**, when nothing else in the window changed since it was read:
  the agent's `window_stamp` is the same (migration 0056: every other change to its
  entries, and every edit of a message, moves it, by trigger). A step's claim then reads
  the entries after the last one held (the last turn's two, whatever the window's length):
  reading each entry's version cost PostgreSQL and this process about 9 us an entry a step
  (docs/numbers.md).
- **Otherwise the whole window, and the messages not held**: a version is the row's id and
  `xmin`, the transaction that wrote that row version: any update (an edit, an embedding)
  makes a new one, so a held message is never a stale one. (An `xmin` repeats only after
  2^32 transactions, and then for the same row only if it was updated; nothing is held that
  long.)

The agent's tools are held with its window, by their versions alike: the claim sends them
only when one changed (their JSON was about a third of the claim's own time).

Held per agent, the window of its last claim only, for the most recent agents: the
messages and tools are shared, never changed in place (the domain copies a model to change
it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace

from cairn.domain.messages import Message
from cairn.domain.tools import Tool

# Agents whose windows are held. A step function serves any agent; a warm one serving a
# few agents in turn finds theirs, and each window is bounded by its model's context.
MAX_AGENTS = 32


@dataclass(frozen=True)
class Window:
    """An agent's window as a claim read it: its entries in order, and the stamp it had."""

    agent_id: str
    stamp: int
    positions: tuple[int, ...]
    versions: tuple[str, ...]
    messages: tuple[Message, ...]
    ids: tuple[str, ...]  # the messages' (the agent's message_ids)
    # The versions as the claim's parameter sends them, kept as the window grows.
    joined: str
    # The agent's tools as the claim read them, and their versions (as the messages').
    tools_version: str | None = None
    tools: tuple[Tool, ...] = ()

    @staticmethod
    def of(
        agent_id: str,
        stamp: int,
        positions: list[int],
        versions: list[str],
        messages: list[Message],
    ) -> Window:
        ids = tuple(m.id for m in messages)
        joined = ",".join(versions)
        return Window(
            agent_id, stamp, tuple(positions), tuple(versions), tuple(messages), ids, joined
        )

    def then(
        self, stamp: int, positions: list[int], versions: list[str], messages: list[Message]
    ) -> Window:
        """This window with entries appended after it."""
        if not versions:
            return self if stamp == self.stamp else replace(self, stamp=stamp)
        joined = ",".join(versions)
        return replace(
            self,
            stamp=stamp,
            positions=self.positions + tuple(positions),
            versions=self.versions + tuple(versions),
            messages=self.messages + tuple(messages),
            ids=self.ids + tuple(m.id for m in messages),
            joined=f"{self.joined},{joined}" if self.joined else joined,
        )

    @property
    def upto(self) -> int:
        """The last entry's position (-1: none)."""
        return self.positions[-1] if self.positions else -1

    def by_version(self) -> dict[str, Message]:
        return dict(zip(self.versions, self.messages, strict=True))


class ParsedWindows:
    """Per agent: its last window as read. Safe across threads."""

    def __init__(self, max_agents: int = MAX_AGENTS) -> None:
        self._by_agent: OrderedDict[str, Window] = OrderedDict()
        self._max_agents = max_agents
        self._lock = threading.Lock()

    def held(self, agent_id: str | None) -> Window | None:
        """The agent's window held (immutable: the claim reads it after other steps may have
        replaced it)."""
        if agent_id is None:
            return None
        with self._lock:
            return self._by_agent.get(agent_id)

    def keep(self, agent_id: str, window: Window) -> None:
        """The agent's window as its claim just read it, replacing what was held."""
        with self._lock:
            self._by_agent[agent_id] = window
            self._by_agent.move_to_end(agent_id)
            while len(self._by_agent) > self._max_agents:
                self._by_agent.popitem(last=False)

    def forget(self) -> None:
        with self._lock:
            self._by_agent.clear()


WINDOWS = ParsedWindows()
