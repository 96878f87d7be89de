"""An agent's history, read (docs/history.md): its timeline of versions with what each
changed, the agent as of any version, and the difference between two.

A version is what one write of the agent left: a step's checkpoint, its creation, an update
through the API, a rewind or a fork (`agent_versions`). Blocks are read back from their own
history at the versions the agent had then; the context window is replayed from its changes;
the settings and the system message's text are the latest a version at or before wrote (and
unknown, `null`, for a version older than the agent's history when a later one changed them).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from cairn.errors import found
from cairn.run.runtime import Runtime
from cairn.store import agents, history, messages
from cairn.store.db import Connection

MAX_PAGE = 100


@dataclass(frozen=True)
class State:
    """The agent as of one version."""

    row: dict[str, Any]  # its agent_versions row
    blocks: list[dict[str, Any]]  # each as block_history has it at that version
    missing_blocks: list[str]  # attached then, deleted since (their history went with them)
    message_ids: list[str]  # the context window, in order (messages deleted since left out)
    missing_message_ids: list[str]
    system: str | None  # the system message's text, None when unknown
    config: dict[str, Any] | None  # the settings, None when unknown
    tools: list[dict[str, str]]  # {"id", "name"} of the tools attached then that still exist


def timeline(
    rt: Runtime, org: str, agent_id: str, *, before: int | None, limit: int
) -> list[dict[str, Any]]:
    """The agent's versions, newest first, each with what it changed from the one before."""
    limit = max(1, min(limit, MAX_PAGE))
    with rt.db.connection() as conn:
        _agent(conn, org, agent_id)
        rows = history.page(conn, org, agent_id, before=before, limit=limit + 1)
        shown = rows[:limit]
        changes = history.changes_of(conn, agent_id, [r["version"] for r in shown])
        labels = _labels(conn, org, [r["blocks"] for r in rows])
        out = []
        for n, row in enumerate(shown):
            # The version before (one more was read for the page's last): none for the first.
            previous = rows[n + 1] if n + 1 < len(rows) else None
            window = changes.get(row["version"], {"added": [], "removed": []})
            config_changed = None
            if row["config"] is not None:
                before_config, _ = history.latest_of(
                    conn, org, agent_id, row["version"] - 1, "config"
                )
                config_changed = sorted(
                    k
                    for k in row["config"]
                    if before_config is None or before_config.get(k) != row["config"][k]
                )
            out.append(
                {
                    **summary(row),
                    "changes": {
                        "blocks": _block_changes(previous, row, labels),
                        "messages_added": [
                            i for i in window["added"] if i not in window["removed"]
                        ],
                        "messages_evicted": [
                            i for i in window["removed"] if i not in window["added"]
                        ],
                        "passages_inserted": list(row["passage_ids"]),
                        "tools_attached": [  # all of them at the first version
                            t
                            for t in row["tool_ids"]
                            if previous is None or t not in previous["tool_ids"]
                        ],
                        "tools_detached": [
                            t
                            for t in (previous or {}).get("tool_ids", [])
                            if t not in row["tool_ids"]
                        ],
                        "config": config_changed,
                        "system_prompt": row["system"] is not None,
                    },
                }
            )
    return out


def state(rt: Runtime, org: str, agent_id: str, version: int) -> State:
    with rt.db.connection() as conn:
        _agent(conn, org, agent_id)
        return state_in(conn, org, agent_id, version)


def state_in(conn: Connection, org: str, agent_id: str, version: int) -> State:
    row = found(
        history.one(conn, org, agent_id, version),
        f"Agent {agent_id} has no version {version} in its history",
    )
    kept_blocks = _block_versions(conn, org, row["blocks"])
    missing_blocks = [b for b in row["blocks"] if b not in kept_blocks]
    window = [i for _, i in history.window_at(conn, agent_id, version)]
    present = {m.id for m in messages.get_many(conn, org, window)}
    config, config_later = history.latest_of(conn, org, agent_id, version, "config")
    system, system_later = history.latest_of(conn, org, agent_id, version, "system")
    if system is None and not system_later and window and window[0] in present:
        system = history.system_content(conn, org, window[0])  # never rewritten since: as now
    attached = history.tool_names(conn, org, list(row["tool_ids"]))
    return State(
        row=row,
        blocks=[kept_blocks[b] for b in row["blocks"] if b in kept_blocks],
        missing_blocks=missing_blocks,
        message_ids=[i for i in window if i in present],
        missing_message_ids=[i for i in window if i not in present],
        system=_text(system),
        config=None if config is None and config_later else config,
        tools=[{"id": t, "name": attached[t]} for t in row["tool_ids"] if t in attached],
    )


def diff(rt: Runtime, org: str, agent_id: str, old: int, new: int) -> dict[str, Any]:
    """What changed from version `old` to `new`: per block a unified diff, the window's
    additions and evictions, the system prompt's diff, the settings and tools that differ."""
    with rt.db.connection() as conn:
        _agent(conn, org, agent_id)
        a, b = state_in(conn, org, agent_id, old), state_in(conn, org, agent_id, new)
    by_a = {blk["block_id"]: blk for blk in a.blocks}
    by_b = {blk["block_id"]: blk for blk in b.blocks}
    blocks = []
    for block_id in [*by_a, *(i for i in by_b if i not in by_a)]:
        was, now = by_a.get(block_id), by_b.get(block_id)
        if was is not None and now is not None and was["version"] == now["version"]:
            continue
        label = (now or was or {})["label"]
        blocks.append(
            {
                "block_id": block_id,
                "label": label,
                "from_version": was["version"] if was else None,
                "to_version": now["version"] if now else None,
                "diff": _unified(was["value"] if was else "", now["value"] if now else "", label),
            }
        )
    config = None
    if a.config is not None and b.config is not None:
        config = {
            k: {"from": a.config.get(k), "to": b.config.get(k)}
            for k in sorted(set(a.config) | set(b.config))
            if a.config.get(k) != b.config.get(k)
        }
    return {
        "from_version": old,
        "to_version": new,
        "blocks": blocks,
        "messages_added": [i for i in b.message_ids if i not in a.message_ids],
        "messages_evicted": [i for i in a.message_ids if i not in b.message_ids],
        "system_prompt": (
            None if a.system is None or b.system is None else _unified(a.system, b.system, "system")
        ),
        "config": config,
        "tools_attached": [t for t in b.tools if t not in a.tools],
        "tools_detached": [t for t in a.tools if t not in b.tools],
    }


def _agent(conn: Connection, org: str, agent_id: str) -> None:
    found(agents.get(conn, org, agent_id), "Agent", agent_id)


def summary(row: dict[str, Any]) -> dict[str, Any]:
    """A version's own fields, as the timeline and the state at it show them."""
    return {
        "version": row["version"],
        "kind": row["kind"],
        "step_id": row["step_id"],
        "run_id": row["run_id"],
        "created_at": row["created_at"],
        "detail": row["detail"],
    }


def _block_versions(
    conn: Connection, org: str, wanted: dict[str, int]
) -> dict[str, dict[str, Any]]:
    rows = history.block_versions(conn, org, wanted)
    return {r["block_id"]: r for r in rows}


def _labels(conn: Connection, org: str, maps: list[dict[str, int]]) -> dict[tuple[str, int], str]:
    pairs = {(b, v) for m in maps for b, v in m.items()}
    rows = history.block_labels(conn, org, sorted(pairs))
    return {(r["block_id"], r["version"]): r["label"] for r in rows}


def _block_changes(
    previous: dict[str, Any] | None, row: dict[str, Any], labels: dict[tuple[str, int], str]
) -> list[dict[str, Any]]:
    before = (previous or {}).get("blocks", {})
    now = row["blocks"]
    out = []
    for block_id, version in now.items():
        if before.get(block_id) != version:
            out.append(
                {
                    "block_id": block_id,
                    "label": labels.get((block_id, version)),
                    "from_version": before.get(block_id),
                    "to_version": version,
                }
            )
    for block_id, version in before.items():
        if block_id not in now:
            out.append(
                {
                    "block_id": block_id,
                    "label": labels.get((block_id, version)),
                    "from_version": version,
                    "to_version": None,
                }
            )
    return out


def _text(content: Any) -> str | None:
    """A message's stored content (its parts) as the text a model read."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def _unified(old: str, new: str, name: str) -> str:
    """A unified diff, a line each: a value with no final newline (most blocks) had its
    last removed line and its first added one joined on one line."""
    lines = difflib.unified_diff(
        old.splitlines(),
        new.splitlines(),
        fromfile=f"{name} (before)",
        tofile=f"{name} (after)",
        lineterm="",
    )
    return "".join(f"{line}\n" for line in lines)
