"""Agents' secrets, sealed in their rows: put as a whole set, opened for a page of agents."""

from __future__ import annotations

from collections.abc import Mapping

from cairn.domain.agent_secrets import AgentSecret
from cairn.sealing import Sealer
from cairn.store.db import Connection

DELETE_ALL = "DELETE FROM agent_secrets WHERE organization_id = %s AND agent_id = %s"
INSERT = """
INSERT INTO agent_secrets (id, organization_id, agent_id, key, value_sealed, description)
SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::bytea[], %s::text[])
"""
SELECT_FOR = """
SELECT id, organization_id, agent_id, key, value_sealed, description, created_at, updated_at
FROM agent_secrets WHERE organization_id = %s AND agent_id = ANY(%s) ORDER BY agent_id, key
"""


def bound(org_id: str, agent_id: str, key: str) -> str:
    """Where a sealed value belongs: it opens nowhere else."""
    return f"agent-secret:{org_id}:{agent_id}:{key}"


def put(
    conn: Connection, sealer: Sealer, org_id: str, agent_id: str, values: Mapping[str, str]
) -> list[AgentSecret]:
    """The agent's secrets become exactly `values`, each sealed (Letta replaces the set)."""
    made = [
        AgentSecret(organization_id=org_id, agent_id=agent_id, key=k, value=v)
        for k, v in values.items()
    ]
    conn.execute(DELETE_ALL, (org_id, agent_id))
    if made:
        conn.execute(
            INSERT,
            (
                [s.id for s in made],
                [org_id] * len(made),
                [agent_id] * len(made),
                [s.key for s in made],
                [sealer.seal(s.value, bound(org_id, agent_id, s.key)) for s in made],
                [s.description for s in made],
            ),
        )
    return made


def opened(
    conn: Connection, sealer: Sealer, org_id: str, agent_ids: list[str]
) -> dict[str, list[AgentSecret]]:
    """Each agent's secrets, opened, by agent (one statement for the page)."""
    found: dict[str, list[AgentSecret]] = {agent_id: [] for agent_id in agent_ids}
    for row in conn.execute(SELECT_FOR, (org_id, agent_ids)).fetchall():
        sealed = bytes(row.pop("value_sealed"))
        value = sealer.open(sealed, bound(org_id, row["agent_id"], row["key"]))
        found.setdefault(row["agent_id"], []).append(AgentSecret(**row, value=value))
    return found


def keys_of(conn: Connection, org_id: str, agent_id: str) -> list[str]:
    """The names of the agent's secrets, nothing opened (an agent file carries no values)."""
    rows = conn.execute(
        "SELECT key FROM agent_secrets WHERE organization_id = %s AND agent_id = %s ORDER BY key",
        (org_id, agent_id),
    ).fetchall()
    return [row["key"] for row in rows]
