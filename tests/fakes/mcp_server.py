"""A real MCP server for the tests, made with the official `mcp` SDK and served over
streamable HTTP or SSE (uvicorn) on a free local port: it counts its calls, can demand a bearer
token, sign its users in with OAuth (`oauth=True`: the SDK's own authorization server, see
tests/fakes/oauth_server.py), and can gain or lose tools between listings."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class McpFake:
    url: str
    token: str | None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    headers_seen: list[dict[str, str]] = field(default_factory=list)
    server: Any = None
    auth: Any = None  # the FakeAuthServer when signing in with OAuth

    def add_tool(self, fn: Any) -> None:
        self.server.tool()(fn)

    def remove_tool(self, name: str) -> None:
        self.server.remove_tool(name)


@contextmanager
def mcp_server(
    token: str | None = None,
    transport: str = "streamable_http",
    *,
    oauth: bool = False,
    issuer: str | None = None,
) -> Iterator[McpFake]:
    import uvicorn
    from mcp.server.mcpserver.server import MCPServer

    for noisy in ("mcp", "httpx", "httpx2", "uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = "/sse" if transport == "sse" else "/mcp"
    # `issuer`: where the server says its authorization server is (by default itself)
    auth = _oauth(f"http://127.0.0.1:{port}", path, issuer) if oauth else {}
    server = MCPServer("cairn-test", **auth)
    fake = McpFake(
        f"http://127.0.0.1:{port}{path}",
        token,
        server=server,
        auth=auth.get("auth_server_provider"),
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        fake.calls.append(("add", {"a": a, "b": b}))
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        """Say it louder."""
        fake.calls.append(("shout", {"text": text}))
        return text.upper() + "!"

    inner = server.sse_app() if transport == "sse" else server.streamable_http_app()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            fake.headers_seen.append(headers)
            if token and headers.get("authorization") != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await inner(scope, receive, send)

    runner = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not runner.started:
        assert time.monotonic() < deadline, "the MCP server did not start"
        time.sleep(0.02)
    try:
        yield fake
    finally:
        runner.should_exit = True
        thread.join(timeout=10)


def _oauth(base: str, path: str, issuer: str | None = None) -> dict[str, Any]:
    """The SDK's authorization server in front of the MCP server, with dynamic registration."""
    import warnings

    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions

    from tests.fakes.oauth_server import FakeAuthServer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        settings = AuthSettings(
            issuer_url=issuer or base,  # type: ignore[arg-type]
            resource_server_url=f"{base}{path}",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(enabled=True),
            validate_token_resource=False,
        )
    return {"auth_server_provider": FakeAuthServer(), "auth": settings}
