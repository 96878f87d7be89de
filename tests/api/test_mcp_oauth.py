"""Signing in to an MCP server with OAuth, as Letta 0.16.1's connect streams do, against a real
MCP server of the tests behind the `mcp` SDK's own authorization server (metadata discovery,
dynamic client registration, PKCE, token exchange and refresh): the stream's events, the
keyless callback, the tokens sealed and used by later calls, refreshed when they expire, a
server that wants a new sign-in said so at once; the waits bounded, hostile callbacks refused,
another organization kept out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.fakes.mcp_server import McpFake, mcp_server


@pytest.fixture
def fake() -> Iterator[McpFake]:
    with mcp_server(oauth=True) as server:
        yield server


def config(fake: McpFake) -> dict[str, Any]:
    transport = "sse" if fake.url.endswith("/sse") else "streamable_http"
    return {"mcp_server_type": transport, "server_url": fake.url}


def events(stack: Stack, method: str, path: str, body: Any = None) -> Iterator[dict[str, Any]]:
    """The connect stream's events, each as it arrives."""
    headers = {"Authorization": f"Bearer {stack.key}"}
    with (
        httpx.Client(base_url=stack.url, headers=headers, timeout=60) as http,
        http.stream(method, path, json=body) as reply,
    ):
        assert reply.status_code == 200, reply.read()
        assert reply.headers["content-type"].startswith("text/event-stream")
        for line in reply.iter_lines():
            if line.startswith("data: "):
                yield json.loads(line.removeprefix("data: "))


def sign_in(stack: Stack, method: str, path: str, body: Any = None) -> list[dict[str, Any]]:
    """A connect stream through to its end, the user allowing access when asked (their
    browser follows the authorization URL to the authorization server, which sends it back
    to Cairn's callback)."""
    seen, callbacks = [], []
    for event in events(stack, method, path, body):
        seen.append(event)
        if event["event"] == "authorization_url":
            landed = httpx.get(event["url"], follow_redirects=True, timeout=30)
            callbacks.append((landed.status_code, landed.json()))
    for status, answer in callbacks:
        assert status == 200 and answer["status"] == "success", answer
        assert answer["message"] == "Authorization successful"
    return seen


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
def test_a_server_is_signed_in_with_oauth_and_its_token_used_afterwards(
    stack: Stack, db: Database, transport: str
) -> None:
    with mcp_server(oauth=True, transport=transport) as fake:
        _signed_in_and_used(stack, fake, db)


def _signed_in_and_used(stack: Stack, fake: McpFake, db: Database) -> None:
    client = stack.client()
    server = client.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
    assert client.mcp_servers.tools.list(server.id) == []  # 401 at create: kept, no tools

    seen = sign_in(stack, "GET", f"/v1/mcp-servers/connect/{server.id}")
    kinds = [e["event"] for e in seen]
    assert kinds == [
        "connection_attempt",
        "oauth_required",
        "authorization_url",
        "waiting_for_auth",
        "success",
    ]
    assert seen[0]["server_name"] == "calc"
    url = seen[2]["url"]
    session_id = seen[2]["session_id"]
    assert session_id.startswith("mcp-oauth-") and "code_challenge=" in url
    assert f"/v1/tools/mcp/oauth/callback/{session_id}" in httpx.URL(url).params["redirect_uri"]
    assert {t["name"] for t in seen[-1]["tools"]} == {"add", "shout"}
    assert seen[-1]["tools"][0]["inputSchema"]["type"] == "object"
    assert len(fake.auth.clients) == 1  # registered dynamically, once
    token = fake.auth.issued[-1]

    # Later calls carry the sign-in: the tools synced, one run directly.
    assert set(client.mcp_servers.refresh(server.id)["added"]) == {"add", "shout"}  # type: ignore[index]
    add = next(t for t in client.mcp_servers.tools.list(server.id) if t.name == "add")
    ran = client.mcp_servers.tools.run(add.id, mcp_server_id=server.id, args={"a": 2, "b": 3})
    assert ran.status == "success" and ran.func_return == "5"
    assert fake.headers_seen[-1]["authorization"] == f"Bearer {token}"

    # What signs in is sealed: no token, refresh token or client secret in the row.
    with db.connection() as conn:
        row = conn.execute(
            "SELECT status, secrets_sealed::text AS sealed, row_to_json(s)::text AS whole"
            " FROM mcp_oauth_sessions s WHERE id = %s",
            (session_id,),
        ).fetchone()
    assert row is not None and row["status"] == "authorized"
    secret = next(iter(fake.auth.clients.values())).client_secret
    for plain in (token, *fake.auth.refresh, secret):
        assert plain and plain.encode().hex() not in row["sealed"] and plain not in row["whole"]

    # Connecting again needs no sign-in: the stored token answers.
    again = [e["event"] for e in events(stack, "GET", f"/v1/mcp-servers/connect/{server.id}")]
    assert again == ["connection_attempt", "success"]


def test_an_expired_token_is_refreshed_and_a_dead_sign_in_says_so_at_once(
    stack: Stack, fake: McpFake, db: Database
) -> None:
    client = stack.client()
    server = client.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
    sign_in(stack, "GET", f"/v1/mcp-servers/connect/{server.id}")
    client.mcp_servers.refresh(server.id)
    add = next(t for t in client.mcp_servers.tools.list(server.id) if t.name == "add")

    # The token's time has passed (as the server and the row both say): refreshed, kept.
    fake.auth.expire_all()
    with db.transaction() as conn:
        conn.execute("UPDATE mcp_oauth_sessions SET expires_at = now() - interval '1 minute'")
    ran = client.mcp_servers.tools.run(add.id, mcp_server_id=server.id, args={"a": 1, "b": 1})
    assert ran.status == "success" and ran.func_return == "2"
    assert fake.auth.refreshed == 1 and len(fake.auth.issued) == 2
    assert fake.headers_seen[-1]["authorization"] == f"Bearer {fake.auth.issued[-1]}"
    ran = client.mcp_servers.tools.run(add.id, mcp_server_id=server.id, args={"a": 2, "b": 2})
    assert ran.func_return == "4" and fake.auth.refreshed == 1  # the new token was kept

    # The server forgets everything it issued: the call fails now, naming the way back.
    fake.auth.access.clear()
    fake.auth.refresh.clear()
    ran = client.mcp_servers.tools.run(add.id, mcp_server_id=server.id, args={"a": 1, "b": 2})
    assert ran.status == "error"
    assert f"GET /v1/mcp-servers/connect/{server.id}" in str(ran.func_return)


def test_a_server_described_in_the_body_is_signed_in_without_being_kept(
    stack: Stack, fake: McpFake
) -> None:
    body = {"server_name": "calc", "type": "streamable_http", "server_url": fake.url}
    seen = sign_in(stack, "POST", "/v1/tools/mcp/servers/connect", body)
    assert [e["event"] for e in seen][-1] == "success"
    assert stack.client().mcp_servers.list() == []


def test_the_callback_takes_one_code_for_a_pending_sign_in_and_nothing_else(
    stack: Stack, fake: McpFake, db: Database
) -> None:
    client = stack.client()
    server = client.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
    callback = f"{stack.url}/v1/tools/mcp/oauth/callback"
    # No key needed (the browser has none), and an unknown sign-in is refused.
    unknown = httpx.get(f"{callback}/mcp-oauth-00000000-0000-4000-8000-000000000000?code=a&state=b")
    assert unknown.status_code == 200
    assert unknown.json() == {"status": "error", "message": "Invalid state parameter"}

    # The user refuses at the authorization server: the stream ends saying so.
    seen = []
    for event in events(stack, "GET", f"/v1/mcp-servers/connect/{server.id}"):
        seen.append(event)
        if event["event"] == "waiting_for_auth":
            sid = seen[-2]["session_id"]
            state = httpx.URL(seen[-2]["url"]).params["state"]
            # an answer without the state it was sent is nobody's: it changes nothing
            stateless = httpx.get(f"{callback}/{sid}", params={"error": "access_denied"})
            assert stateless.json()["message"] == "Missing authorization code or state"
            refused = httpx.get(
                f"{callback}/{sid}",
                params={
                    "error": "access_denied",
                    "error_description": "the user said no",
                    "state": state,
                },
            )
            assert refused.json() == {
                "status": "error",
                "message": "OAuth error: access_denied - the user said no",
            }
            # Nothing may replace it afterwards, a code least of all.
            late = httpx.get(f"{callback}/{sid}", params={"code": "x", "state": "y"})
            assert late.json()["status"] == "error"
    assert seen[-1]["event"] == "error" and "refused or failed" in seen[-1]["message"]
    with db.connection() as conn:
        row = conn.execute("SELECT status FROM mcp_oauth_sessions").fetchone()
    assert row is not None and row["status"] == "error"
    assert fake.auth.issued == []

    # A callback with a forged state (anyone who saw the session id in the redirect_uri):
    # refused, and it changes nothing: the user's own answer still finishes the sign-in.
    seen = []
    for event in events(stack, "GET", f"/v1/mcp-servers/connect/{server.id}"):
        seen.append(event)
        if event["event"] == "waiting_for_auth":
            sid = seen[-2]["session_id"]
            forged = httpx.get(f"{callback}/{sid}", params={"code": "stolen", "state": "forged"})
            assert forged.json() == {"status": "error", "message": "Invalid state parameter"}
            real = httpx.get(seen[-2]["url"], follow_redirects=True, timeout=30)
            assert real.json()["message"] == "Authorization successful", real.text
    assert seen[-1]["event"] != "error", seen[-1]
    assert len(fake.auth.issued) == 1


def test_a_sign_in_whose_authorization_server_is_refused_says_so(stack: Stack) -> None:
    """Its authorization server at an address the policy refuses (the metadata service
    here): the stream ends naming the refusal, not asking for a sign-in nobody could make."""
    client = stack.client()
    with mcp_server(oauth=True, issuer="https://169.254.169.254") as far:
        server = client.mcp_servers.create(server_name="far", config=config(far))  # type: ignore[arg-type]
        seen = list(events(stack, "GET", f"/v1/mcp-servers/connect/{server.id}"))
    assert seen[-1]["event"] == "error", seen
    assert "refused" in seen[-1]["message"] and "169.254.169.254" in seen[-1]["message"]
    assert "needs a token or an OAuth sign-in" not in seen[-1]["message"]


def test_a_sign_in_nobody_finishes_ends_within_its_wait(db: Database, fake: McpFake) -> None:
    with make_stack(db, mcp_oauth_wait_seconds=1) as stack:
        client = stack.client()
        server = client.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
        seen = list(events(stack, "GET", f"/v1/mcp-servers/connect/{server.id}"))
        assert [e["event"] for e in seen][-3:] == ["authorization_url", "waiting_for_auth", "error"]
        assert "no OAuth authorization arrived within 1 s" in seen[-1]["message"]
        with db.connection() as conn:
            row = conn.execute("SELECT status FROM mcp_oauth_sessions").fetchone()
        assert row is not None and row["status"] == "error"


def test_servers_that_cannot_sign_in_end_their_stream_with_the_reason(
    stack: Stack, db: Database
) -> None:
    client = stack.client()
    stdio = client.mcp_servers.create(
        server_name="local", config={"mcp_server_type": "stdio", "command": "npx", "args": []}
    )  # type: ignore[arg-type]
    seen = list(events(stack, "GET", f"/v1/mcp-servers/connect/{stdio.id}"))
    assert [e["event"] for e in seen] == ["connection_attempt", "error"]
    assert seen[-1]["message"].startswith("Connection failed: the stdio MCP server `local`")
    with mcp_server() as plain:  # no sign-in needed: the tools at once
        ok = client.mcp_servers.create(server_name="plain", config=config(plain))  # type: ignore[arg-type]
        seen = list(events(stack, "GET", f"/v1/mcp-servers/connect/{ok.id}"))
        assert [e["event"] for e in seen] == ["connection_attempt", "success"]
    seen = list(events(stack, "GET", f"/v1/mcp-servers/connect/{ok.id}"))  # now down
    assert [e["event"] for e in seen] == ["connection_attempt", "error"]
    assert seen[-1]["message"].startswith("Connection failed: ")
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM mcp_oauth_sessions").fetchone()["n"] == 0  # type: ignore[index]


def test_another_organization_can_neither_connect_nor_use_the_sign_in(
    stack: Stack, fake: McpFake, db: Database
) -> None:
    client = stack.client()
    server = client.mcp_servers.create(server_name="calc", config=config(fake))  # type: ignore[arg-type]
    sign_in(stack, "GET", f"/v1/mcp-servers/connect/{server.id}")
    other = _other_organizations_key(db)
    headers = {"Authorization": f"Bearer {other}"}
    refused = httpx.get(f"{stack.url}/v1/mcp-servers/connect/{server.id}", headers=headers)
    assert refused.status_code == 404
    # The same URL added by the other organization does not ride on the first one's sign-in.
    theirs = httpx.post(
        f"{stack.url}/v1/mcp-servers/",
        headers=headers,
        json={"server_name": "calc", "config": config(fake)},
    ).json()
    tools = httpx.get(f"{stack.url}/v1/mcp-servers/{theirs['id']}/tools", headers=headers)
    assert tools.json() == []  # its listing at create was refused: it sent no token
    assert "authorization" not in fake.headers_seen[-1]


def _other_organizations_key(db: Database) -> str:
    from cairn.domain import Organization, User
    from cairn.store import tenancy

    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="other"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="eve"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="t")
    return key


def test_the_sweeper_forgets_sign_ins_never_finished(stack: Stack, db: Database) -> None:
    from cairn.mcp_servers.connect import prune

    with db.transaction() as conn:
        for sid, status, age in (
            ("old", "pending", 25),
            ("new", "pending", 1),
            ("ok", "authorized", 99),
        ):
            conn.execute(
                "INSERT INTO mcp_oauth_sessions (id, organization_id, server_url, server_name,"
                " status, created_at) VALUES (%s, %s, 'http://x/mcp', 'x', %s,"
                " now() - make_interval(hours => %s))",
                (f"mcp-oauth-{sid}", stack.org_id, status, age),
            )
    assert prune(stack.runtime, {}) == 1
    with db.connection() as conn:
        left = {r["id"] for r in conn.execute("SELECT id FROM mcp_oauth_sessions").fetchall()}
    assert left == {"mcp-oauth-new", "mcp-oauth-ok"}
