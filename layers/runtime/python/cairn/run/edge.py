"""What one edge (a channel such as Telegram, an integration such as MCP) adds to the
server, handed to assembly as one record: the core names no edge, and assembly registers
each through its record (ARCHITECTURE.md, "Core and edges")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cairn.config import Group, Settings
from cairn.run.ports import DocumentStore, ExternalTools, RunEnd
from cairn.run.provider_vault import ProviderVault
from cairn.run.runtime import AroundStep, QueueKind, SweepPhase
from cairn.sealing import Sealer
from cairn.store.db import Database


@dataclass(frozen=True)
class OperatorParts:
    """What an operator's action writes through besides the database, as assembly chooses
    them for the settings (the API's own): providers' keys, the sealing key, files'
    originals; `progress` hears a long action's phases (phase, done, total)."""

    settings: Settings
    vault: ProviderVault
    sealer: Sealer
    documents: DocumentStore
    progress: Callable[[str, int, int], None] | None = None


# An operator's action an edge adds (`cairn-admin`, the migrate function's payload): the
# database, the event, the parts, and when a long action must leave off (to be run again).
OperatorAction = Callable[
    [Database, dict[str, Any], OperatorParts, Callable[[], bool] | None], dict[str, Any]
]


@dataclass(frozen=True)
class Edge:
    """`routes` name its route modules (each with a `router`), served under /v1, each with
    the rules its router registers: the app imports one when a request first needs it (a
    worker's function never loads them); `keyless` are
    whole-path patterns answered without an API key (the route proves its caller another
    way: a webhook's secret, an OAuth sign-in's unguessable id); `kinds` are its queue
    messages by kind; `around_step`, the contexts a queued step runs in; `sweep`, the
    sweeper's phases by name; `run_end`, what it starts when a run ends; `external_tools`,
    the calls of tools served outside Cairn; `settings`, its group of settings (read from
    the environment with the core's, `Group.within` finds it); `actions`, the operator's
    actions it adds, by name."""

    name: str
    routes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    keyless: tuple[str, ...] = ()
    kinds: Mapping[str, QueueKind] = field(default_factory=dict)
    around_step: tuple[AroundStep, ...] = ()
    sweep: tuple[tuple[str, SweepPhase], ...] = ()
    run_end: tuple[RunEnd, ...] = ()
    external_tools: ExternalTools | None = None
    settings: type[Group] | None = None
    actions: Mapping[str, OperatorAction] = field(default_factory=dict)
