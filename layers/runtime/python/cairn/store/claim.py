"""Claiming a step: take the agent's lease and read everything the step needs, in one trip.

One statement, so a step costs one round trip before the model is called. Measured with
`bench/step_overhead.py`: the fourteen separate reads it replaces took 4.1 ms of a 30 ms step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from psycopg import Cursor
from pydantic import TypeAdapter

from cairn.domain.agents import Agent
from cairn.domain.base import DEFERRED
from cairn.domain.blocks import Block
from cairn.domain.folders import AgentFolder
from cairn.domain.messages import Message
from cairn.domain.passages import Archive
from cairn.domain.runs import OutboxCommand, Run
from cairn.domain.tools import Tool
from cairn.store.db import Connection
from cairn.store.files import AGENT_FOLDERS
from cairn.store.limits import ORG_CAP, SPENT
from cairn.store.messages import MESSAGE_COLUMNS
from cairn.store.parsed_windows import WINDOWS, Window
from cairn.store.sql_text import Native

# The lease: free, ours, or lapsed; and no older run of the agent still waiting (runs are
# served in the order they were created).
CLAIM = f"""
WITH run AS (
    SELECT * FROM runs WHERE organization_id = %(org)s AND id = %(run)s
), done AS (
    SELECT kind FROM steps WHERE run_id = %(run)s AND step_index = %(idx)s
), org AS (
    -- Whether the organization holds `cap` agents (or, holding some, the pool is down to
    -- its reserve: migration 0031), asked once and only for a run taking a new agent: the
    -- question takes the organization's lock (migrations 0020, 0044), before the agent row below
    -- is locked. A CTE with a volatile function is evaluated once.
    SELECT CASE WHEN %(cap)s <= 0 OR a.lease_run_id = %(run)s THEN false
                ELSE cairn_org_full(%(org)s, %(run)s, {ORG_CAP}, %(lock_held)s,
                                    %(reserve_at)s) END AS is_full
    FROM run JOIN agents a ON a.organization_id = %(org)s AND a.id = run.agent_id
), held AS (
    -- A coalescing agent's new run takes no message for its first step until its window
    -- ends (store/runs.py START_RUN): until then later sends join it.
    SELECT greatest(extract(epoch FROM (run.request_config ->> 'coalesce_until')::timestamptz
                                       - now()), 0)::float8 AS seconds
    FROM run WHERE %(idx)s = 0 AND run.request_config ? 'coalesce_until'
), lease AS (
    UPDATE agents a
    SET lease_run_id = %(run)s, lease_expires_at = now() + make_interval(secs => %(ttl)s)
    FROM run
    WHERE a.organization_id = %(org)s AND a.id = run.agent_id
      AND run.status NOT IN ('completed', 'failed', 'cancelled')
      AND NOT EXISTS (SELECT 1 FROM done)
      AND NOT EXISTS (SELECT 1 FROM held WHERE seconds > 0)
      AND (a.lease_run_id IS NULL OR a.lease_run_id = %(run)s OR a.lease_expires_at < now())
      -- A run taking a new agent waits while its organization holds `cap` of them.
      AND (a.lease_run_id = %(run)s OR NOT coalesce((SELECT is_full FROM org), false))
      AND (a.lease_run_id = %(run)s OR NOT EXISTS (
          SELECT 1 FROM runs older
          WHERE older.agent_id = a.id AND older.id <> run.id
            AND older.status IN ('created', 'running')
            AND (older.created_at, older.id) < (run.created_at, run.id)))
    RETURNING a.*
), running AS (
    -- The run is under way from its first step's claim: it read `created` through the whole
    -- of its first model call. (`run` above is read before this: the claim returns it as
    -- it was.)
    UPDATE runs SET status = 'running', updated_at = now()
    WHERE organization_id = %(org)s AND id = %(run)s AND status = 'created'
      AND EXISTS (SELECT 1 FROM lease)
), started AS (
    -- The step starts: counted on its command (the watchdog tells a crashing step from a
    -- queued one by it). Sent by a sync send in the same pipeline as the row's insert.
    UPDATE outbox SET claims = claims + 1
    WHERE organization_id = %(org)s AND dedup_key = %(key)s AND EXISTS (SELECT 1 FROM lease)
), archive AS (
    SELECT ar.* FROM lease l
    JOIN archives_agents aa ON aa.agent_id = l.id AND aa.is_owner
    JOIN archives ar ON ar.id = aa.archive_id
    ORDER BY ar.created_at, ar.id LIMIT 1
), parsed AS MATERIALIZED (  -- hashed, not a scan of the array for each entry
    -- One text, not an array: psycopg searches each element of a list it sends with a
    -- regular expression (whether to quote it); a version holds no comma.
    SELECT unnest(string_to_array(%(held)s, ',')) AS version
), stamp AS (
    -- The window's stamp as this statement's snapshot reads it, as it reads the entries and
    -- messages below: not from the lease's row, which is the row as an update committed
    -- meanwhile left it (migration 0056). `held`: this process holds the agent's window at
    -- that stamp.
    SELECT a.window_stamp, a.id = %(held_agent)s AND a.window_stamp = %(held_stamp)s AS held
    FROM run JOIN agents a ON a.organization_id = %(org)s AND a.id = run.agent_id
), entries AS (
    -- The whole window, or, when nothing in it changed since this process read it but what
    -- was added after it, only that (store/parsed_windows.py).
    SELECT e.position, e.message_id, false AS appended
    FROM lease l JOIN context_entries e ON e.agent_id = l.id
    WHERE NOT coalesce((SELECT held FROM stamp), false)
    UNION ALL
    SELECT e.position, e.message_id, true
    FROM lease l JOIN context_entries e ON e.agent_id = l.id AND e.position > %(held_upto)s
    WHERE (SELECT held FROM stamp)
), tools_held AS (
    -- The agent's tools by version, in order, as the window's messages are (json_agg of their
    -- rows was about a third of the claim's time for eight tools).
    SELECT coalesce(string_agg(t.id || '@' || t.xmin::text, ',' ORDER BY at.attached_at, t.name),
                    '') AS version
    FROM lease l JOIN agents_tools at ON at.agent_id = l.id JOIN tools t ON t.id = at.tool_id
), in_window AS (
    -- The entries' messages, each with its version, made into JSON only when this process
    -- does not hold it parsed already (an appended one it cannot: the set of those it
    -- holds is then never built). Each message by its key in a subquery per entry: a join
    -- would let the planner pick a scan of the whole history when it misjudges the
    -- window's size.
    SELECT w.position, w.message_id, w.version, w.sent,
           CASE WHEN w.sent THEN (SELECT to_json(m) FROM (SELECT {MESSAGE_COLUMNS} FROM messages
                                                          WHERE id = w.message_id) m) END AS body
    FROM (SELECT v.position, v.message_id, v.version,
                 v.appended OR (v.version IN (SELECT version FROM parsed)) IS NOT TRUE AS sent
          FROM (SELECT e.position, e.message_id, e.appended,
                       -- A subquery, not a lateral join: the planner flattened that into a
                       -- join and once chose a scan of the whole history (CI, stale stats).
                       (SELECT id || '@' || xmin::text FROM messages
                        WHERE id = e.message_id) AS version
                FROM entries e
                -- Kept a subquery of its own (OFFSET 0): pulled up, its version's lookup was
                -- copied into each of the three places that read it, three reads an entry.
                OFFSET 0) v) w
)
SELECT
    (SELECT to_jsonb(run) FROM run)::text AS run,
    EXISTS (SELECT 1 FROM done) AS done,
    NOT EXISTS (SELECT 1 FROM lease) AND coalesce((SELECT is_full FROM org), false) AS org_full,
    CASE WHEN NOT EXISTS (SELECT 1 FROM lease) THEN (SELECT seconds FROM held) END AS held,
    (SELECT to_jsonb(o) FROM outbox o
     WHERE o.organization_id = %(org)s AND o.dedup_key = %(next_key)s)::text AS next_command,
    (SELECT to_jsonb(l)::text FROM lease l) AS agent,
    (SELECT window_stamp FROM stamp) AS window_stamp,
    NOT coalesce((SELECT held FROM stamp), false) AS whole,
    coalesce((SELECT array_agg(position ORDER BY position) FROM in_window), '{{}}')
        AS context_positions,
    (SELECT coalesce(json_agg(b ORDER BY ab.attached_at, b.id), '[]')::text
     FROM lease l JOIN agents_blocks ab ON ab.agent_id = l.id
     JOIN blocks b ON b.id = ab.block_id) AS blocks,
    (SELECT version FROM tools_held) AS tools_version,
    -- Made into JSON only when this process does not hold these tools parsed already.
    CASE WHEN (SELECT version FROM tools_held) IS DISTINCT FROM %(held_tools)s THEN
        (SELECT coalesce(json_agg(t ORDER BY at.attached_at, t.name), '[]')::text
         FROM lease l JOIN agents_tools at ON at.agent_id = l.id
         JOIN tools t ON t.id = at.tool_id) END AS tools,
    coalesce((SELECT array_agg(version ORDER BY position) FROM in_window), '{{}}')
        AS context_versions,
    (SELECT coalesce(json_agg(body ORDER BY position) FILTER (WHERE sent), '[]')
     FROM in_window)::text AS context,
    -- Sizes kept by the writes (migration 0010), not counted over the history each step.
    coalesce((SELECT l.message_count FROM lease l), 0) AS recall_count,
    (SELECT to_jsonb(archive) FROM archive)::text AS archive,
    coalesce((SELECT s.passages FROM archive JOIN archive_stats s ON s.archive_id = archive.id),
             0) AS archival_count,
    coalesce((SELECT s.tags FROM archive JOIN archive_stats s ON s.archive_id = archive.id),
             '{{}}') AS archival_tags,
    (SELECT coalesce(jsonb_object_agg(key, payload), '{{}}') FROM step_journal
     WHERE run_id = %(run)s AND step_index = %(idx)s) AS journal,
    (SELECT kind FROM steps WHERE run_id = %(run)s AND step_index = %(idx)s - 1) AS previous_kind,
    (SELECT {AGENT_FOLDERS.format(agent="l.id")}::text FROM lease l) AS folders,
    -- A spent monthly budget ends the run at its next step (migration 0037).
    {SPENT.format(org="%(org)s")} AS spent
"""
_CLAIM = Native.of(CLAIM)
# The claim as a function too (migration 0048), for connections that prepare nothing:
# without server-side prepared statements (behind RDS Proxy) PostgreSQL planned it on every
# step, about 1.7 ms of its CPU; a function's plan is kept by the database session. Its
# parameters' types, in the order of _CLAIM.names, as PostgreSQL infers them for CLAIM
# (tests/integration/test_statement_functions.py holds the three alike). A new name since
# migration 0056 changed its parameters (docs/storage.md).
CLAIMING = _CLAIM.served(
    "cairn_claim_2",
    (
        "text", "text", "integer", "integer", "boolean", "integer", "double precision", "text",
        "text", "text", "bigint", "bigint", "text", "text",
    ),
)  # fmt: skip


# The context window's messages not held parsed arrive as JSON text, validated by pydantic's
# own parser: half the time of json.loads and a model_validate per message (~0.5 ms for 60).
_CONTEXT = TypeAdapter(list[Message], config=DEFERRED)
# The claim's other rows arrive as JSON text too, for the same reason.
_BLOCKS = TypeAdapter(list[Block], config=DEFERRED)
_TOOLS = TypeAdapter(list[Tool], config=DEFERRED)
_FOLDERS = TypeAdapter(list[AgentFolder], config=DEFERRED)


class Sent(NamedTuple):
    """A claim sent (`send`), to `read` once its pipeline is synced: with the agent's window
    this process held when it was sent."""

    cursor: Cursor[dict[str, Any]]
    held: Window | None


@dataclass
class Claim:
    run: Run | None
    done: bool
    next_command: OutboxCommand | None
    agent: Agent | None  # None: the agent is held by another run (or the run is over)
    blocks: list[Block]
    tools: list[Tool]
    context: list[Message]
    context_positions: list[int]  # of the context's entries (store/context.py)
    recall_count: int
    archive: Archive | None
    archival_count: int
    archival_tags: list[str]
    journal: dict[str, dict[str, Any]]
    previous_kind: str | None
    org_full: bool = False  # no agent: its organization holds as many as it may (cap)
    folders: list[AgentFolder] | None = None  # attached, with the agent's views of their files
    # No agent: the run's first step waits this long yet for more messages to join it.
    held_seconds: float = 0.0
    # The organization's spent monthly budget ('monthly_tokens', 'monthly_cost_usd') if any.
    spent: str | None = None


def claim(
    conn: Connection,
    org_id: str,
    run_id: str,
    step_index: int,
    *,
    lease_seconds: float,
    cap: int = 0,
    reserve_at: int = 0,
    agent_id: str | None = None,
) -> Claim:
    return read(
        send(
            conn,
            org_id,
            run_id,
            step_index,
            lease_seconds=lease_seconds,
            cap=cap,
            reserve_at=reserve_at,
            agent_id=agent_id,
        )
    )


def send(
    conn: Connection,
    org_id: str,
    run_id: str,
    step_index: int,
    *,
    lease_seconds: float,
    cap: int = 0,
    lock_held: bool = False,
    reserve_at: int = 0,
    agent_id: str | None = None,
) -> Sent:
    """The claim statement alone, so a pipeline can send it after another (`read` it then).
    `cap`: how many agents the organization's runs may hold at once (0: no limit);
    `lock_held`: the transaction holds its organization's lock (migrations 0020, 0044);
    `reserve_at`: with `cap`, an organization holding agents takes another only while all
    organizations together hold fewer (0: no reserve; migration 0031); `agent_id`: the
    run's agent, when the caller knows it: its window's messages held parsed are not sent
    again (store/parsed_windows.py)."""
    held = WINDOWS.held(agent_id)
    cursor = CLAIMING.execute(
        conn,
        {
            "org": org_id,
            "run": run_id,
            "idx": step_index,
            "ttl": lease_seconds,
            "key": f"{run_id}:{step_index}",
            "next_key": f"{run_id}:{step_index + 1}",
            "cap": cap,
            "lock_held": lock_held,
            "reserve_at": reserve_at,
            "held": held.joined if held else "",
            "held_agent": held.agent_id if held else None,
            "held_stamp": held.stamp if held else -1,
            "held_upto": held.upto if held else -1,
            "held_tools": held.tools_version if held else None,
        },
    )
    return Sent(cursor, held)


def read(sent: Sent) -> Claim:
    row = sent.cursor.fetchone()
    assert row is not None
    agent = Agent.model_validate_json(row["agent"]) if row["agent"] else None
    window = _window(agent.id, row, sent.held) if agent is not None else None
    context = list(window.messages) if window is not None else []
    tools = _tools(row, sent.held)
    if agent is not None and window is not None:
        WINDOWS.keep(agent.id, replace(window, tools_version=row["tools_version"], tools=tools))
        agent.message_ids = list(window.ids)
    return Claim(
        run=Run.model_validate_json(row["run"]) if row["run"] else None,
        done=row["done"],
        next_command=OutboxCommand.model_validate_json(row["next_command"])
        if row["next_command"]
        else None,
        agent=agent,
        blocks=_BLOCKS.validate_json(row["blocks"]),
        tools=list(tools),
        context=context,
        context_positions=list(window.positions) if window is not None else [],
        recall_count=int(row["recall_count"]),
        archive=Archive.model_validate_json(row["archive"]) if row["archive"] else None,
        archival_count=int(row["archival_count"]),
        archival_tags=list(row["archival_tags"]),
        journal=dict(row["journal"]),
        previous_kind=row["previous_kind"],
        org_full=bool(row["org_full"]),
        held_seconds=float(row["held"] or 0.0),
        folders=_FOLDERS.validate_json(row["folders"]) if row["folders"] else [],
        spent=row["spent"],
    )


def _tools(row: dict[str, Any], held: Window | None) -> tuple[Tool, ...]:
    """The agent's tools: as held, when the claim sent none (their versions are the same)."""
    if row["tools"] is None and held is not None and held.tools_version == row["tools_version"]:
        return held.tools
    return tuple(_TOOLS.validate_json(row["tools"] or "[]"))


def _window(agent_id: str, row: dict[str, Any], held: Window | None) -> Window:
    """The window in order: what was held and the entries appended after it, or the whole
    window read, each message held or parsed from those the claim sent (in the same order,
    the others left out)."""
    stamp, positions = row["window_stamp"] or 0, row["context_positions"] or []
    versions, sent = row["context_versions"] or [], _CONTEXT.validate_json(row["context"])
    if held is not None and not row["whole"]:
        return held.then(stamp, positions, versions, sent)
    by_version = held.by_version() if held is not None else {}
    parsed = iter(sent)
    window = [by_version[v] if v in by_version else next(parsed) for v in versions]
    return Window.of(agent_id, stamp, positions, versions, window)
