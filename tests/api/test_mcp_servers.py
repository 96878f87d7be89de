"""Organizations' MCP servers through letta-client 1.5.0 unchanged, against a real MCP server
the test starts with the official `mcp` SDK (streamable HTTP): added with a token (sealed,
shown masked), its tools listed into the organization's, run directly and from a step,
refreshed, deleted; kept as Letta keeps them when they cannot be reached; stdio ones run in
the tool jail (the fake in tests/fakes/stdio_mcp_server.py); the outbound-address policy and
the tenancy rules hold."""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from letta_client import APIStatusError

from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.api.test_custom_tools import tool_return
from tests.api.test_mcp_by_name import http, ok
from tests.fakes.llm_server import call
from tests.fakes.mcp_server import McpFake, mcp_server

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
TOKEN = "mcp-token-0123456789"


@pytest.fixture
def fake() -> Iterator[McpFake]:
    with mcp_server(token=TOKEN) as server:
        yield server


def config(fake: McpFake, token: str = TOKEN) -> dict[str, Any]:
    return {
        "mcp_server_type": "streamable_http",
        "server_url": fake.url,
        "auth_header": "Authorization",
        "auth_token": f"Bearer {token}",
    }


def test_a_server_is_added_with_its_tools_and_its_token_never_shown(
    stack: Stack, fake: McpFake, db: Database
) -> None:
    client = stack.client()
    server = client.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
    shown = server.model_dump()
    assert shown["server_name"] == "calc" and shown["server_url"] == fake.url
    assert shown["auth_token"] == "...6789" and TOKEN not in str(shown)
    assert [s.id for s in client.mcp_servers.list()] == [server.id]
    assert client.mcp_servers.retrieve(server.id).server_name == "calc"  # type: ignore[union-attr]
    tools = client.mcp_servers.tools.list(server.id)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"add", "shout"}
    add = by_name["add"]
    assert add.tool_type == "external_mcp" and add.json_schema["parameters"]["required"] == [
        "a",
        "b",
    ]  # type: ignore[index]
    assert client.mcp_servers.tools.retrieve(add.id, mcp_server_id=server.id).name == "add"
    ran = client.mcp_servers.tools.run(add.id, mcp_server_id=server.id, args={"a": 2, "b": 3})
    assert ran.status == "success" and ran.func_return == "5"
    assert fake.calls[-1] == ("add", {"a": 2, "b": 3})
    assert all(h.get("authorization") == f"Bearer {TOKEN}" for h in fake.headers_seen)
    with db.connection() as conn:
        row = conn.execute(
            "SELECT secrets_sealed FROM mcp_servers WHERE id = %s", (server.id,)
        ).fetchone()
    assert row is not None and TOKEN.encode() not in bytes(row["secrets_sealed"])


def test_an_agent_calls_an_mcp_tool_in_a_step_under_its_rules(stack: Stack, fake: McpFake) -> None:
    client = stack.client()
    server = client.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
    shout = next(t for t in client.mcp_servers.tools.list(server.id) if t.name == "shout")
    agent = client.agents.create(llm_config=LLM, tool_ids=[shout.id])  # type: ignore[arg-type]
    stack.fake.reply("", call("shout", text="hello"))
    stack.fake.reply("said it")
    ret = tool_return(client.agents.messages.create(agent.id, input="shout hello"))
    assert ret.status == "success" and ret.tool_return == "HELLO!"  # type: ignore[attr-defined]
    assert fake.calls == [("shout", {"text": "hello"})]
    assert "shout" in stack.fake.requests[0].tool_names
    # An approval rule holds for an MCP tool as for any: the call waits, nothing is called.
    client.agents.tools.update_approval("shout", agent_id=agent.id, body_requires_approval=True)  # type: ignore[call-arg]
    stack.fake.reply("", call("shout", text="again"))
    waiting = client.agents.messages.create(agent.id, input="once more")
    assert waiting.stop_reason.stop_reason == "requires_approval"
    assert len(fake.calls) == 1


def test_a_server_that_refuses_or_cannot_be_reached_is_kept_and_synced_by_a_refresh(
    stack: Stack, fake: McpFake, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Letta keeps a server it could not sync (create_mcp_server_with_tools: "optimistically
    sync its tools"), so a server added before it is up, or before its name resolves, works
    once it is."""
    client = stack.client()
    with caplog.at_level(logging.WARNING, logger="cairn.mcp_servers.service"):
        server = client.mcp_servers.create(server_name="calc", config=config(fake, token="wrong"))  # type: ignore[arg-type]
    assert [s.id for s in client.mcp_servers.list()] == [server.id]
    assert client.mcp_servers.tools.list(server.id) == []
    assert any("calc" in r.getMessage() for r in caplog.records), caplog.text
    client.mcp_servers.update(server.id, config={"auth_token": f"Bearer {TOKEN}"})  # type: ignore[arg-type]
    assert client.mcp_servers.refresh(server.id) == {
        "added": ["add", "shout"],
        "updated": [],
        "deleted": [],
    }
    # A name that does not resolve yet (DNS is the machine's: this one is answered here).
    real = socket.getaddrinfo

    def later(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "mcp.not-yet.example":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", later)
    soon = client.mcp_servers.create(
        server_name="soon",
        config={
            "mcp_server_type": "streamable_http",
            "server_url": "https://mcp.not-yet.example/mcp",
        },  # type: ignore[arg-type]
    )
    assert soon.server_url == "https://mcp.not-yet.example/mcp"  # type: ignore[union-attr]
    assert client.mcp_servers.tools.list(soon.id) == []
    with pytest.raises(APIStatusError) as unreached:  # asked for, not best effort: why
        client.mcp_servers.refresh(soon.id)
    assert unreached.value.status_code == 400 and "does not resolve" in str(unreached.value.body)


FAKES = Path(__file__).resolve().parents[1] / "fakes"
SECRET = "stdio-secret-0123456789"


@pytest.fixture
def jailed(db: Database) -> Iterator[Stack]:
    """A stack whose stdio MCP servers see this interpreter's environment (the `mcp` SDK)
    and the tests' fakes, read-only: the operator's CAIRN_MCP_STDIO_PATHS."""
    with make_stack(db, mcp_stdio_paths=f"{sys.prefix},{FAKES}") as stack:
        yield stack


def stdio_config(*args: str) -> dict[str, Any]:
    return {
        "mcp_server_type": "stdio",
        "command": sys.executable,
        "args": [str(FAKES / "stdio_mcp_server.py"), *args],
        "env": {"API_KEY": SECRET},
    }


def test_a_stdio_server_runs_in_the_tool_jail_with_its_env(jailed: Stack, db: Database) -> None:
    client = jailed.client()
    server = client.mcp_servers.create(server_name="local", config=stdio_config())  # type: ignore[arg-type]
    shown = server.model_dump()
    assert shown["mcp_server_type"] == "stdio" and shown["command"] == sys.executable
    # Its organization reads its env back, as Letta shows it (sealed at rest: below).
    assert shown["env"] == {"API_KEY": SECRET}
    tools = {t.name: t for t in client.mcp_servers.tools.list(server.id)}  # synced at create
    assert {"add", "env", "read", "connect"} <= set(tools)
    ran = client.mcp_servers.tools.run(
        tools["env"].id, mcp_server_id=server.id, args={"name": "API_KEY"}
    )
    assert ran.status == "success" and ran.func_return == SECRET  # its env, given whole
    # The server's own environment and files stay out of its reach.
    ran = client.mcp_servers.tools.run(
        tools["env"].id, mcp_server_id=server.id, args={"name": "DATABASE_URL"}
    )
    assert ran.func_return == "<unset>"
    ran = client.mcp_servers.tools.run(
        tools["read"].id, mcp_server_id=server.id, args={"path": __file__}
    )
    assert ran.func_return is not None and ran.func_return.startswith("refused")
    assert client.mcp_servers.refresh(server.id) == {"added": [], "updated": [], "deleted": []}
    with http(jailed) as by_name:  # Letta's older routes, by the server's name
        listed = ok(by_name.get("/tools/mcp/servers/local/tools"))
        assert {"add", "env"} <= {t["name"] for t in listed}
        ran = ok(
            by_name.post("/tools/mcp/servers/local/tools/add/execute", json={"args": {"a": 1}})
        )
        assert ran["status"] == "error"  # b is missing: the server's own refusal
        ran = ok(
            by_name.post(
                "/tools/mcp/servers/local/tools/add/execute", json={"args": {"a": 1, "b": 2}}
            )
        )
        assert ran["status"] == "success" and ran["func_return"] == "3"
    with db.connection() as conn:
        row = conn.execute(
            "SELECT secrets_sealed FROM mcp_servers WHERE id = %s", (server.id,)
        ).fetchone()
    assert row is not None and SECRET.encode() not in bytes(row["secrets_sealed"])
    from letta_client import Letta

    from cairn.domain import Organization, User
    from cairn.store import tenancy

    with db.transaction() as conn:  # another organization: not found, env and all
        org = tenancy.create_organization(conn, Organization(name="other"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="eve"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="t")
    theirs = Letta(base_url=jailed.url, api_key=key, max_retries=0, timeout=30)
    with pytest.raises(APIStatusError) as hidden:
        theirs.mcp_servers.retrieve(server.id)
    assert hidden.value.status_code == 404 and SECRET not in str(hidden.value.body)
    with pytest.raises(APIStatusError) as no_command:
        client.mcp_servers.create(server_name="bare", config={"mcp_server_type": "stdio"})  # type: ignore[arg-type]
    assert no_command.value.status_code == 400 and "config.command" in str(no_command.value.body)


def test_an_agent_calls_a_stdio_servers_tool_in_a_step(jailed: Stack) -> None:
    client = jailed.client()
    server = client.mcp_servers.create(server_name="local", config=stdio_config())  # type: ignore[arg-type]
    add = next(t for t in client.mcp_servers.tools.list(server.id) if t.name == "add")
    agent = client.agents.create(llm_config=LLM, tool_ids=[add.id])  # type: ignore[arg-type]
    jailed.fake.reply("", call("add", a=2, b=40))
    jailed.fake.reply("42 it is")
    ret = tool_return(client.agents.messages.create(agent.id, input="add 2 and 40"))
    assert ret.status == "success" and ret.tool_return == "42"  # type: ignore[attr-defined]


def test_a_stdio_server_that_fails_says_so_naming_it(
    jailed: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    client = jailed.client()
    with caplog.at_level(logging.WARNING):
        dead = client.mcp_servers.create(server_name="dead", config=stdio_config("exit"))  # type: ignore[arg-type]
    assert client.mcp_servers.tools.list(dead.id) == []  # kept, as Letta keeps it
    with pytest.raises(APIStatusError) as failed:
        client.mcp_servers.refresh(dead.id)
    assert failed.value.status_code == 400 and "`dead`" in str(failed.value.body)
    missing = {"mcp_server_type": "stdio", "command": "/no/such/program", "env": {"K": SECRET}}
    gone = client.mcp_servers.create(server_name="gone", config=missing)  # type: ignore[arg-type]
    with pytest.raises(APIStatusError) as failed:
        client.mcp_servers.refresh(gone.id)
    body = str(failed.value.body)
    assert "`gone`" in body and "cannot start /no/such/program" in body
    assert SECRET not in caplog.text  # the program's words reach its organization, not logs


def test_the_outbound_policy_holds_for_a_servers_url(db: Database, fake: McpFake) -> None:
    # Loopback not opened to organizations' URLs here.
    with make_stack(db, outbound_networks="") as closed:
        client = closed.client()
        with pytest.raises(APIStatusError) as refused:  # an address written in the URL
            client.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
        assert refused.value.status_code == 400 and "public addresses" in str(refused.value.body)
        assert "config.server_url" in str(refused.value.body)
        # A name is checked when it is reached: kept (as Letta keeps it), never reached.
        by_name = {**config(fake), "server_url": fake.url.replace("127.0.0.1", "localhost")}
        kept = client.mcp_servers.create(server_name="calc", config=by_name)  # type: ignore[arg-type]
        assert client.mcp_servers.tools.list(kept.id) == []
        with pytest.raises(APIStatusError) as inside:
            client.mcp_servers.refresh(kept.id)
        assert inside.value.status_code == 400 and "public addresses" in str(inside.value.body)
    assert fake.headers_seen == []  # no request was made


def test_a_refresh_adds_updates_and_removes_tools_and_a_delete_takes_them_all(
    stack: Stack, fake: McpFake
) -> None:
    client = stack.client()
    server = client.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
    add = next(t for t in client.mcp_servers.tools.list(server.id) if t.name == "add")
    agent = client.agents.create(llm_config=LLM, tool_ids=[add.id])  # type: ignore[arg-type]

    def double(n: int) -> int:
        """Double a number."""
        return 2 * n

    fake.add_tool(double)
    fake.remove_tool("add")
    report = client.mcp_servers.refresh(server.id)
    assert report == {"added": ["double"], "updated": [], "deleted": ["add"]}
    assert {t.name for t in client.mcp_servers.tools.list(server.id)} == {"double", "shout"}
    assert "add" not in {t.name for t in client.agents.tools.list(agent.id)}  # taken off it
    client.mcp_servers.delete(server.id)
    assert client.mcp_servers.list() == []
    assert client.tools.list(name="shout").items == []  # type: ignore[attr-defined]


def test_another_organization_sees_none_of_it(stack: Stack, fake: McpFake, db: Database) -> None:
    from cairn.domain import Organization, User
    from cairn.store import tenancy

    server = stack.client().mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="other"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="eve"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="t")
    from letta_client import Letta

    theirs = Letta(base_url=stack.url, api_key=key, max_retries=0, timeout=30)
    assert theirs.mcp_servers.list() == []
    with pytest.raises(APIStatusError) as hidden:
        theirs.mcp_servers.tools.list(server.id)
    assert hidden.value.status_code == 404
    made = theirs.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
    assert made.id != server.id  # names are per organization


def test_an_sse_server_serves_as_a_streamable_one_does(stack: Stack) -> None:
    with mcp_server(token=TOKEN, transport="sse") as sse:
        client = stack.client()
        settings = {**config(sse), "mcp_server_type": "sse"}
        server = client.mcp_servers.create(server_name="old-calc", config=settings)  # type: ignore[arg-type]
        add = next(t for t in client.mcp_servers.tools.list(server.id) if t.name == "add")
        ran = client.mcp_servers.tools.run(add.id, mcp_server_id=server.id, args={"a": 4, "b": 5})
        assert ran.status == "success" and ran.func_return == "9"
        assert sse.calls == [("add", {"a": 4, "b": 5})]


def test_a_tool_with_no_arguments_or_only_optional_ones_runs_in_a_step(
    stack: Stack, fake: McpFake
) -> None:
    """MCP tools often take nothing (`ping()`) or only optional arguments: their schema has
    no `required`. Such a call once broke every step of its agent (a KeyError, a 500)."""

    def ping() -> str:
        """Answer pong."""
        fake.calls.append(("ping", {}))
        return "pong"

    def greet(name: str = "world") -> str:
        """Greet someone."""
        fake.calls.append(("greet", {"name": name}))
        return f"hello {name}"

    fake.add_tool(ping)
    fake.add_tool(greet)
    client = stack.client()
    server = client.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
    tools = {t.name: t for t in client.mcp_servers.tools.list(server.id)}
    assert "required" not in tools["ping"].json_schema["parameters"]  # as the server lists it
    agent = client.agents.create(llm_config=LLM, tool_ids=[tools["ping"].id, tools["greet"].id])  # type: ignore[arg-type]
    for name, args, said in (("ping", {}, "pong"), ("greet", {}, "hello world")):
        stack.fake.reply("", call(name, **args))
        stack.fake.reply("done")
        ret = tool_return(client.agents.messages.create(agent.id, input=f"{name} please"))
        assert ret.status == "success" and ret.tool_return == said, ret  # type: ignore[attr-defined]
    sent = {
        t["function"]["name"]: t["function"]["parameters"]
        for t in stack.fake.requests[-1].body["tools"]
    }
    # Strict, as Letta's OpenAI client sends every tool: each property required.
    assert sent["ping"]["required"] == [] and sent["greet"]["required"] == ["name"]
    assert sent["ping"]["type"] == "object"
    assert fake.calls == [("ping", {}), ("greet", {"name": "world"})]
