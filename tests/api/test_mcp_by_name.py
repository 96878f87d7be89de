"""Letta's older MCP routes, by server name (/v1/tools/mcp/servers; letta-client 1.5.0 has no
methods for them: driven over HTTP), against a real MCP server started with the `mcp` SDK:
the same servers and tools as /v1/mcp-servers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.conftest import Stack
from tests.api.test_custom_tools import tool_return
from tests.fakes.llm_server import call
from tests.fakes.mcp_server import McpFake, mcp_server

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
TOKEN = "by-name-token-0123456789"


@pytest.fixture
def fake() -> Iterator[McpFake]:
    with mcp_server(token=TOKEN) as server:
        yield server


def http(stack: Stack) -> httpx.Client:
    auth = {"Authorization": f"Bearer {stack.key}"}
    return httpx.Client(base_url=f"{stack.url}/v1", headers=auth, timeout=30)


def ok(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()


def body(fake: McpFake, token: str = TOKEN) -> dict[str, Any]:
    return {
        "server_name": "calc",
        "type": "streamable_http",
        "server_url": fake.url,
        "auth_header": "Authorization",
        "auth_token": f"Bearer {token}",
    }


def test_a_server_added_by_name_brings_its_tools_and_one_can_be_registered_alone(
    stack: Stack, fake: McpFake
) -> None:
    with http(stack) as client:
        tested = ok(client.post("/tools/mcp/servers/test", json=body(fake)))
        assert {t["name"] for t in tested["tools"]} == {"add", "shout"}
        assert ok(client.get("/tools/mcp/servers")) == {}  # testing added nothing
        added = ok(client.put("/tools/mcp/servers", json=body(fake)))
        assert [c["server_name"] for c in added] == ["calc"]
        assert added[0]["auth_token"] == "...6789" and TOKEN not in str(added)
        listed = ok(client.get("/tools/mcp/servers/calc/tools"))
        assert {t["name"]: t["inputSchema"]["required"] for t in listed}["add"] == ["a", "b"]
        sdk = stack.client()
        # Synced as Letta 0.16.1's add_mcp_server_to_config does (its tools kept at once).
        synced = sdk.tools.list(name="add").items  # type: ignore[attr-defined]
        assert [t.tool_type for t in synced] == ["external_mcp"]
        assert [t.name for t in sdk.tools.list(name="shout").items] == ["shout"]  # type: ignore[attr-defined]
        tool = ok(client.post("/tools/mcp/servers/calc/add"))  # registered again: the same
        assert tool["name"] == "add" and tool["id"] == synced[0].id
        done = ok(
            client.post(
                "/tools/mcp/servers/calc/tools/shout/execute", json={"args": {"text": "hi"}}
            )
        )
        assert done["status"] == "success" and done["func_return"] == "HI!"
        agent = sdk.agents.create(llm_config=LLM, tool_ids=[tool["id"]])  # type: ignore[arg-type]
        stack.fake.reply("", call("add", a=1, b=41))
        stack.fake.reply("ok")
        ret = tool_return(sdk.agents.messages.create(agent.id, input="sum"))
        assert ret.tool_return == "42"  # type: ignore[attr-defined]
        fake.remove_tool("shout")
        report = ok(client.post("/tools/mcp/servers/calc/resync"))
        assert report == {"added": [], "updated": [], "deleted": ["shout"]}
        renamed = ok(client.patch("/tools/mcp/servers/calc", json={"server_name": "calculator"}))
        assert renamed["server_name"] == "calculator"
        assert client.get("/tools/mcp/servers/calc/tools").status_code == 404
        assert ok(client.delete("/tools/mcp/servers/calculator")) == []
        assert sdk.tools.list(name="add").items == []  # type: ignore[attr-defined]


def test_servers_are_kept_as_letta_keeps_them_and_refusals_name_the_reason(
    stack: Stack, fake: McpFake
) -> None:
    with http(stack) as client:
        # Kept though it refuses the token (synced later), as Letta keeps it.
        ok(client.put("/tools/mcp/servers", json=body(fake, token="wrong")))
        assert stack.client().tools.list(name="add").items == []  # type: ignore[attr-defined]
        # A stdio server: kept and listed; its program (not one that speaks MCP) runs in the
        # tool jail and ends: the reason, naming it.
        ok(
            client.put(
                "/tools/mcp/servers",
                json={"server_name": "local", "command": "sh", "args": ["-c", "id"]},
            )
        )
        listed = ok(client.get("/tools/mcp/servers"))
        assert listed["local"] == {
            "server_name": "local",
            "type": "stdio",
            "command": "sh",
            "args": ["-c", "id"],
            "env": None,
        }
        assert listed["calc"]["type"] == "streamable_http"
        used = client.get("/tools/mcp/servers/local/tools")
        assert used.status_code == 400 and "stdio MCP server `local` failed" in used.text
        ran = client.post("/tools/mcp/servers/local/tools/id/execute", json={"args": {}})
        assert "stdio MCP server `local` failed" in ran.text
        wrong = client.get("/tools/mcp/servers/calc/tools")  # asked for: the reason, a 400
        assert wrong.status_code == 400 and "calc" in wrong.text
        nameless = client.put("/tools/mcp/servers", json={"server_url": fake.url})
        assert nameless.status_code == 400 and "server_name" in nameless.text
        assert client.get("/tools/mcp/servers/nope/tools").status_code == 404
