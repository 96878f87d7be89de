"""The model is asked as Letta 0.16.1 asked it: the fixture's agents, imported from Letta's own
database, send the request a real Letta 0.16.1 server sent for them, recorded from that server
by tests/fixtures/letta-requests/record.py (its README says how): the request's parameters,
each tool's schema (strict, as Letta's OpenAI client sends them), every message of the context
window (a memgpt_v2 agent's thoughts in its calls, as Letta writes them back) and the system
prompt, field by field. What differs by design is named where it is set aside."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import Stack
from tests.api.test_letta_import_api import imported_client
from tests.fakes.llm_server import call
from tests.integration import test_letta_import
from tests.integration.test_letta_import import ORG

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "letta-requests"
# In the order the recorder sent them: each case's window holds the turns before it.
ORDER = ("openai-agent-A", "openai-agent-B", "anthropic-agent-A")
# A rebuilt system prompt's metadata says when it was built, and how many messages are out of
# the window: Letta counts before it saves the new message (-1 for a window that lost none),
# Cairn after (0).
BUILT = re.compile(
    r"- The current system date is: .*\n- Memory blocks were last modified: .*\n"
    r"- -?\d+ previous messages"
)


@pytest.fixture(scope="module")
def letta_db(pg_dsn: str) -> Iterator[str]:
    """The fixture's Letta database, restored into a database of its own."""
    yield from test_letta_import.letta_url.__wrapped__(pg_dsn)  # type: ignore[attr-defined]


def recorded(case: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((RECORDED / f"{case}.json").read_text())
    return found


def tools_by_name(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each tool by its name, without Anthropic's cache mark: Letta sends the tools in the
    order of a set of names (a new order in each process), and marks whichever is last."""
    out = {}
    for tool in body["tools"]:
        name = tool.get("name") or tool["function"]["name"]
        out[name] = {k: v for k, v in tool.items() if k != "cache_control"}
    return out


def built(system: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The system blocks with the build's own metadata set aside."""
    return [{**block, "text": BUILT.sub("(built)", block["text"])} for block in system]


def test_imported_agents_ask_the_model_as_letta_asked_it(stack: Stack, letta_db: str) -> None:
    client = imported_client(stack, letta_db)
    for case in ORDER:
        letta = recorded(case)
        agent = client.agents.retrieve(letta["agent_id"])
        # The recorder's server called its fake model; point the agent at ours (and switch
        # its model, as the recorder did, with the same request).
        config = letta["llm_config"] or agent.llm_config.model_dump(exclude_none=True)
        endpoint = stack.fake.base_url + ("" if "anthropic" in case else "/v1")
        client.agents.update(agent.id, llm_config={**config, "model_endpoint": endpoint})  # type: ignore[arg-type]
        before = len(stack.fake.requests)
        if letta["reply_tool"]:
            stack.fake.reply("", call(letta["reply_tool"], message="MOCK_REPLY recorded"))
        else:
            stack.fake.reply("MOCK_REPLY recorded")
        client.agents.messages.create(
            agent.id, messages=[{"role": "user", "content": letta["message"]}]
        )
        sent = stack.fake.requests[before]
        theirs, ours = letta["body"], sent.body
        assert sent.provider == letta["provider"] and sent.path == letta["path"], case
        if "anthropic" in case:  # thinking between calls (Letta's source: not recorded)
            headers = {k.lower(): v for k, v in sent.headers.items()}
            assert headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"

        # Parameters: all of Letta's, but `user` names the caller (Letta: its user; Cairn:
        # the organization, the tenant a provider's abuse report should name).
        params = {k: v for k, v in theirs.items() if k not in ("messages", "tools", "system")}
        if "user" in params:
            assert params.pop("user").startswith("user-") and ours["user"] == ORG, case
        assert {k: v for k, v in ours.items() if k in params} == params, case
        assert set(ours) - {"messages", "tools", "system", "user"} == set(params), case

        assert tools_by_name(ours) == tools_by_name(theirs), case
        if "anthropic" in case:  # one cache mark on the tools, on the last one sent
            assert [t.get("cache_control") for t in ours["tools"]][-1] == {"type": "ephemeral"}
            assert json.dumps(ours["tools"]).count("cache_control") == 1
        assert ours["messages"] == theirs["messages"], case
        if "system" in theirs:  # Anthropic's; OpenAI's is the first message above
            assert built(ours["system"]) == built(theirs["system"]), case
