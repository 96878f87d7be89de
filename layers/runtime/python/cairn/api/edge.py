"""What one edge (a channel such as Telegram, an integration such as MCP) adds to the
server, handed to assembly as one record: the core names no edge, and assembly registers
each through its record (ARCHITECTURE.md, "Core and edges")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cairn.config import Group
from cairn.run.ports import ExternalTools, RunEnd
from cairn.run.runtime import AroundStep, QueueKind, SweepPhase


@dataclass(frozen=True)
class Edge:
    """`routes` name its route modules (each with a `router`), served under /v1 and imported
    only when the app is built (a worker's function never loads them); `keyless` are
    whole-path patterns answered without an API key (the route proves its caller another
    way: a webhook's secret, an OAuth sign-in's unguessable id); `kinds` are its queue
    messages by kind; `around_step`, the contexts a queued step runs in; `sweep`, the
    sweeper's phases by name; `run_end`, what it starts when a run ends; `external_tools`,
    the calls of tools served outside Cairn; `settings`, its group of settings (read from
    the environment with the core's, `Group.within` finds it)."""

    name: str
    routes: tuple[str, ...] = ()
    keyless: tuple[str, ...] = ()
    kinds: Mapping[str, QueueKind] = field(default_factory=dict)
    around_step: tuple[AroundStep, ...] = ()
    sweep: tuple[tuple[str, SweepPhase], ...] = ()
    run_end: tuple[RunEnd, ...] = ()
    external_tools: ExternalTools | None = None
    settings: type[Group] | None = None
