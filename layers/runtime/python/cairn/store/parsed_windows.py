"""The context windows this process has parsed, kept between an agent's steps.

A step's claim reads the agent's whole window (store/claim.py), and a `letta_v1_agent`
keeps every message until its window fills: by its 50th message a step read about 110
messages, each made into JSON by PostgreSQL and parsed here, and both grew with the window.
A message row changes only when edited, so the claim is told which versions this process
holds parsed and sends the others only. A version is the row's id and `xmin`, the
transaction that wrote that row version: any update (an edit, an embedding) makes a new
one, so a held message is never a stale one. (An `xmin` repeats only after 2^32
transactions, and then for the same row only if it was updated; nothing is held that long.)

Held per agent, the window of its last claim only, for the most recent agents: the
messages are shared, never changed in place (the domain copies a message to change it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from cairn.domain.messages import Message

# Agents whose windows are held. A step function serves any agent; a warm one serving a
# few agents in turn finds theirs, and each window is bounded by its model's context.
MAX_AGENTS = 32


class ParsedWindows:
    """Per agent: its last window's messages by version. Safe across threads."""

    def __init__(self, max_agents: int = MAX_AGENTS) -> None:
        self._by_agent: OrderedDict[str, dict[str, Message]] = OrderedDict()
        self._max_agents = max_agents
        self._lock = threading.Lock()

    def held(self, agent_id: str | None) -> dict[str, Message]:
        """The agent's messages held, by version (a copy of the mapping: the claim reads
        it after other steps may have replaced it)."""
        if agent_id is None:
            return {}
        with self._lock:
            window = self._by_agent.get(agent_id)
            return dict(window) if window else {}

    def keep(self, agent_id: str, window: dict[str, Message]) -> None:
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
