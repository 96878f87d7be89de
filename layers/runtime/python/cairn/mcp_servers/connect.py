"""Letta's connect streams (GET /v1/mcp-servers/connect/{id}, POST
/v1/tools/mcp/servers/connect): the server reached as it is; when it answers 401, a sign-in
with OAuth (mcp_servers/oauth.py) and its tools listed with the new token. The events are
Letta's: `connection_attempt`, then `success` with the tools, or `oauth_required`,
`authorization_url` (with the sign-in's `session_id`), `waiting_for_auth` and `success` or
`error`. Nothing here is kept but the sign-in: the tools are listed, not synced (a refresh
syncs them), as in Letta."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any

from cairn import outbound
from cairn.llm import deadline
from cairn.mcp_servers import oauth
from cairn.mcp_servers import store_oauth as mcp_oauth
from cairn.mcp_servers.calls import reached, target_of
from cairn.mcp_servers.client import McpError, McpSignInRequired, McpTarget, list_tools
from cairn.mcp_servers.models import McpOAuthSession, McpServer
from cairn.mcp_servers.settings import McpSettings
from cairn.run.runtime import Runtime

logger = logging.getLogger(__name__)

Event = dict[str, Any]  # {"event": kind, ...}; a success's `tools` are McpTools
CALLBACK_PATH = "/v1/tools/mcp/oauth/callback/"


def events(rt: Runtime, server: McpServer, base_url: str) -> Iterator[Event]:
    """The connect stream's events. A sign-in waits for its user at most
    CAIRN_MCP_OAUTH_WAIT_SECONDS and within the request's own time (behind API Gateway the
    whole answer leaves at its end: connect through the streaming URL to see the
    authorization URL as it comes)."""
    mcp = McpSettings.within(rt.settings)
    wait = mcp.mcp_oauth_wait_seconds
    if (left := deadline.seconds_left()) is not None:
        wait = max(1.0, min(wait, left - mcp.mcp_timeout_seconds))
    yield {"event": "connection_attempt", "server_name": server.server_name}
    opened = outbound.networks(rt.settings.outbound_networks)
    try:
        with reached(server, rt.db, rt.engine.sealer, rt.engine.sandbox, rt.settings) as target:
            tools = list_tools(target, opened, mcp.mcp_timeout_seconds)
    except McpSignInRequired:
        pass  # below: the sign-in
    except McpError as err:
        yield _error(f"Connection failed: {err}")
        return
    else:
        yield {"event": "success", "tools": tools}
        return
    yield from _sign_in(rt, server, base_url, wait)


def _sign_in(rt: Runtime, server: McpServer, base_url: str, wait_seconds: float) -> Iterator[Event]:
    yield {"event": "oauth_required", "message": "OAuth authentication required"}
    assert server.server_url is not None
    session = McpOAuthSession(
        organization_id=server.organization_id,
        server_url=server.server_url,
        server_name=server.server_name,
    )
    session.redirect_uri = f"{base_url}{CALLBACK_PATH}{session.id}"
    with rt.db.transaction() as conn:
        mcp_oauth.put(conn, rt.engine.sealer, session)
    told: queue.Queue[tuple[str, Any]] = queue.Queue()
    auth = oauth.signing_in(
        rt.db, rt.engine.sealer, session, lambda url: told.put(("url", url)), wait_seconds
    )
    target = McpTarget(server.server_url, target_of(server).transport, server.headers(), auth)
    opened = outbound.networks(rt.settings.outbound_networks)

    def sign_in() -> None:
        """The SDK's flow, in a thread of its own: it waits for a person, this stream tells."""
        try:
            listed = list_tools(
                target, opened, wait_seconds + McpSettings.within(rt.settings).mcp_timeout_seconds
            )
            told.put(("tools", listed))
        except McpError as err:
            told.put(("error", str(err)))
        except Exception as err:  # never a silent thread: the stream says what broke
            logger.exception("MCP OAuth sign-in failed")
            told.put(("error", f"{type(err).__name__}: {err}"))

    threading.Thread(target=sign_in, name=f"mcp-oauth-{session.id}", daemon=True).start()
    while True:
        kind, value = told.get()
        if kind == "url":
            yield {"event": "authorization_url", "url": value, "session_id": session.id}
            yield {"event": "waiting_for_auth", "message": "Waiting for user authorization..."}
        elif kind == "tools":
            yield {"event": "success", "tools": value}
            return
        else:
            yield _error(f"Failed to trigger OAuth: {value}")
            return


def _error(message: str) -> Event:
    return {"event": "error", "message": message}


def prune(rt: Runtime, _: dict[str, str]) -> int:
    """The sweeper's phase: sign-ins that never completed, after a day (Letta's cleanup)."""
    with rt.db.connection() as conn:
        return mcp_oauth.prune(conn, older_than_hours=oauth.PRUNE_HOURS)


SWEEP = (("mcp_oauth_sessions", prune),)
