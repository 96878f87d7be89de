"""An agent's secrets (Letta's `secrets`, once `tool_exec_environment_variables`): sealed
at rest, shown to their organization as Letta shows them, in the environment of that agent's
tool calls and no one else's, carried by name through agent files."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest
from letta_client import APIStatusError

from cairn.sealing import SealError
from cairn.store import agent_secrets
from cairn.store.db import Database
from tests.api.conftest import Stack
from tests.api.test_custom_tools import SNOOPS, tool_return
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def shown(agent: Any) -> dict[str, str]:
    return {s.key: s.value for s in agent.secrets or []}


def environment_of_a_call(stack: Stack, agent_id: str) -> dict[str, str]:
    stack.fake.reply("", call("snoop"))
    stack.fake.reply("ok")
    ret = tool_return(stack.client().agents.messages.create(agent_id, input="go"))
    assert ret.status == "success", ret  # type: ignore[attr-defined]
    # str() of the dict the tool's JSON parses to, as Letta shows a dict return
    seen: dict[str, str] = ast.literal_eval(ret.tool_return)  # type: ignore[attr-defined]
    return seen


def test_an_agents_secrets_are_its_tools_environment_and_sealed_at_rest(
    stack: Stack, db: Database
) -> None:
    client = stack.client()
    snoop = client.tools.create(source_code=SNOOPS)
    agent = client.agents.create(
        llm_config=LLM,  # type: ignore[arg-type]
        tool_ids=[snoop.id],
        secrets={"API_TOKEN": "tok-123456", "REGION": "eu-west-1"},
    )
    assert shown(agent) == {"API_TOKEN": "tok-123456", "REGION": "eu-west-1"}
    assert all(s.id.startswith("agent-env-") and s.agent_id == agent.id for s in agent.secrets)
    assert [s.key for s in agent.tool_exec_environment_variables or []] == ["API_TOKEN", "REGION"]
    # As from Letta, the 1.x SDKs get them back when they ask (`include`).
    assert shown(client.agents.retrieve(agent.id, include=["agent.secrets"])) == shown(agent)
    assert client.agents.retrieve(agent.id).secrets == []
    seen = environment_of_a_call(stack, agent.id)
    assert seen["API_TOKEN"] == "tok-123456" and seen["REGION"] == "eu-west-1"
    assert "CAIRN_TOOL_CALL_ID" in seen  # the sandbox's own variables stay
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT key, value_sealed FROM agent_secrets WHERE agent_id = %s", (agent.id,)
        ).fetchall()
    assert {r["key"] for r in rows} == {"API_TOKEN", "REGION"}
    assert all(b"tok-123456" not in bytes(r["value_sealed"]) for r in rows)


def test_a_sealed_value_moved_to_another_agent_does_not_open(stack: Stack, db: Database) -> None:
    client = stack.client()
    first = client.agents.create(llm_config=LLM, secrets={"KEY": "one"})  # type: ignore[arg-type]
    second = client.agents.create(llm_config=LLM, secrets={"KEY": "two"})  # type: ignore[arg-type]
    with db.transaction() as conn:
        conn.execute(
            "UPDATE agent_secrets SET value_sealed = (SELECT value_sealed FROM agent_secrets "
            "WHERE agent_id = %s) WHERE agent_id = %s",
            (first.id, second.id),
        )
    with db.connection() as conn, pytest.raises(SealError):
        agent_secrets.opened(conn, stack.runtime.engine.sealer, stack.org_id, [second.id])


def test_one_agents_tools_see_none_of_another_agents_secrets_nor_the_servers(
    stack: Stack,
) -> None:
    client = stack.client()
    snoop = client.tools.create(source_code=SNOOPS)
    client.agents.create(
        llm_config=LLM,  # type: ignore[arg-type]
        tool_ids=[snoop.id],
        secrets={"OTHER_TOKEN": "theirs-987654"},
    )
    mine = client.agents.create(llm_config=LLM, tool_ids=[snoop.id], secrets={"MINE": "m"})  # type: ignore[arg-type]
    seen = environment_of_a_call(stack, mine.id)
    assert seen["MINE"] == "m" and "OTHER_TOKEN" not in seen
    text = json.dumps(seen)
    assert "theirs-987654" not in text and "sk-test" not in text  # nor the server's model key


def test_an_update_replaces_the_set_as_letta_does(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM, secrets={"A": "1", "B": "2"})  # type: ignore[arg-type]
    changed = client.agents.update(agent.id, secrets={"B": "3", "C": "4"})
    assert shown(changed) == {"B": "3", "C": "4"}
    # Letta: `secrets or tool_exec_environment_variables`; an empty one alone changes nothing.
    assert shown(client.agents.update(agent.id, secrets={})) == {"B": "3", "C": "4"}
    old_name = client.agents.update(agent.id, tool_exec_environment_variables={"D": "5"})
    assert shown(old_name) == {"D": "5"}
    assert shown(client.agents.update(agent.id, name="renamed")) == {"D": "5"}


@pytest.mark.parametrize("key", ["1BAD", "WITH SPACE", "DASH-ED", ""])
def test_a_name_no_environment_variable_can_have_is_a_422(stack: Stack, key: str) -> None:
    client = stack.client()
    with pytest.raises(APIStatusError) as refused:
        client.agents.create(llm_config=LLM, secrets={key: "x"})  # type: ignore[arg-type]
    assert refused.value.status_code == 422 and "environment variable" in str(refused.value.body)
    assert client.agents.list().items == []  # type: ignore[attr-defined]


def test_an_agent_file_carries_the_names_and_the_import_gives_the_values(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM, secrets={"TOKEN": "t-1", "MODE": "fast"})  # type: ignore[arg-type]
    exported = client.agents.export_file(agent.id)
    data = json.loads(exported) if isinstance(exported, str) else exported
    (entry,) = data["agents"]
    assert entry["secrets"] == {"MODE": "", "TOKEN": ""}  # values wiped, as Letta exports
    assert entry["tool_exec_environment_variables"] == {"MODE": "", "TOKEN": ""}
    raw = json.dumps(data).encode()
    (filled,) = client.agents.import_file(
        file=("agent.af", raw), secrets=json.dumps({"TOKEN": "t-2", "EXTRA": "ignored"})
    ).agent_ids
    assert shown(client.agents.retrieve(filled, include=["agent.secrets"])) == {
        "MODE": "",
        "TOKEN": "t-2",
    }
    (bare,) = client.agents.import_file(file=("agent.af", raw)).agent_ids
    assert shown(client.agents.retrieve(bare, include=["agent.secrets"])) == {
        "MODE": "",
        "TOKEN": "",
    }
