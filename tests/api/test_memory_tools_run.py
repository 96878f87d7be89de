"""An agent's memory tools run outside a step (`client.agents.tools.run`), as Letta runs them:
the edit saved in one transaction (a new block version and its history row), seen by the
agent's next step; wrong arguments or an impossible edit answer status `error` with no
result and save nothing; another organization's agent is not found."""

from __future__ import annotations

from typing import Any

import pytest
from letta_client import Letta, NotFoundError

from cairn.domain import Organization, User
from cairn.store import tenancy
from cairn.store.db import Database
from tests.api.conftest import Stack

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def _history(db: Database, block_id: str) -> list[tuple[int, str, str]]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT version, value, actor_type FROM block_history WHERE block_id = %s"
            " ORDER BY version",
            (block_id,),
        ).fetchall()
    return [(r["version"], r["value"], r["actor_type"]) for r in rows]


def ada(client: Letta) -> Any:
    """An agent with two memory tools, a block to edit and a read-only one."""
    return client.agents.create(
        llm_config=LLM,  # type: ignore[arg-type]
        tools=["memory_insert", "core_memory_append"],
        memory_blocks=[
            {"label": "human", "value": "Name: Ada."},
            {"label": "rules", "value": "Be kind.", "read_only": True},
        ],
    )


def test_a_memory_tool_runs_on_the_agents_blocks_and_its_edit_is_saved(
    stack: Stack, db: Database
) -> None:
    client = stack.client()
    agent = ada(client)
    human = client.agents.blocks.retrieve("human", agent_id=agent.id)
    before = _history(db, human.id)
    done = client.agents.tools.run(
        "memory_insert", agent_id=agent.id, args={"label": "human", "new_str": "Likes tea."}
    )
    assert done.status == "success" and "human" in str(done.func_return)
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == (
        "Name: Ada.\nLikes tea."
    )
    after = _history(db, human.id)
    assert len(after) == len(before) + 1 and after[-1][1:] == ("Name: Ada.\nLikes tea.", "agent")
    # The agent's next step reads the edited memory in its system prompt.
    stack.fake.reply("Noted.")
    client.agents.messages.create(agent.id, input="hi")
    assert "Likes tea." in stack.fake.requests[-1].body["messages"][0]["content"]


def test_wrong_arguments_or_an_edit_that_cannot_be_made_save_nothing(
    stack: Stack, db: Database
) -> None:
    client = stack.client()
    agent = ada(client)
    human = client.agents.blocks.retrieve("human", agent_id=agent.id)
    before = _history(db, human.id)
    for name, args, why in (
        ("memory_insert", {"new_str": "no label"}, "label"),
        ("memory_insert", {"label": "nope", "new_str": "x"}, "No memory block"),
        ("core_memory_append", {"label": "rules", "content": "x"}, "read-only"),
        ("memory_insert", {"label": "human", "new_str": "x" * 20_001}, "limit"),
    ):
        done = client.agents.tools.run(name, agent_id=agent.id, args=args)
        assert done.status == "error" and done.func_return is None, (name, args)
        assert any(why in line for line in done.stderr or []), (why, done.stderr)
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == "Name: Ada."
    assert _history(db, human.id) == before


def test_another_organizations_agent_is_not_found(stack: Stack, db: Database) -> None:
    agent = stack.client().agents.create(llm_config=LLM, tools=["memory_insert"])  # type: ignore[arg-type]
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="other"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="eve"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="t")
    theirs = Letta(base_url=stack.url, api_key=key, max_retries=0, timeout=30)
    with pytest.raises(NotFoundError):
        theirs.agents.tools.run(
            "memory_insert", agent_id=agent.id, args={"label": "human", "new_str": "x"}
        )
