"""Signing in to an organization's MCP server with OAuth, as Letta 0.16.1 does, through the
`mcp` SDK's OAuth client (`OAuthClientProvider`): discovery, dynamic registration, PKCE, the
token exchange and refreshes are the SDK's; what it keeps (the registered client, the
tokens) goes in a sign-in row (store/mcp_oauth.py), sealed.

A sign-in runs inside a connect stream (mcp_servers/connect.py): the SDK hands the
authorization URL to the redirect handler (shown to the user as an event), then waits in
the callback handler for the code, which the keyless callback route writes into the row —
from any process, as on Lambda the browser's callback may reach another function than the
one streaming. Afterwards each call to a server that has no token of its own carries the
organization's latest sign-in to its URL (`stored`), refreshed by the SDK when it expires;
a server that wants a new sign-in fails that call saying so, never waits for a person."""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cairn.domain.base import utc_now
from cairn.mcp_servers import store_oauth as store
from cairn.mcp_servers.client import McpSignInRequired
from cairn.mcp_servers.models import McpOAuthSession, McpServer
from cairn.sealing import Sealer
from cairn.store.db import Database

CLIENT_NAME = "Cairn"
POLL_SECONDS = 0.5  # how often a waiting sign-in reads its row for the callback's code
PRUNE_HOURS = 24  # Letta's cleanup of sign-ins that never completed


class _Storage:
    """The SDK's TokenStorage over one sign-in row (the SDK's calls are few and short)."""

    def __init__(self, db: Database, sealer: Sealer, session_id: str) -> None:
        self.db, self.sealer, self.session_id = db, sealer, session_id
        self.context: Any = None  # the provider's, for the metadata it discovered

    def _read(self) -> McpOAuthSession:
        with self.db.connection() as conn:
            found = store.get(conn, self.sealer, self.session_id)
        if found is None:
            raise McpSignInRequired("the MCP server's OAuth sign-in is gone: sign in again")
        return found

    def _change(self, **changes: Any) -> None:
        with self.db.transaction() as conn:
            found = store.get(conn, self.sealer, self.session_id, lock=True)
            if found is not None:
                store.put(conn, self.sealer, found.model_copy(update=changes))

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        kept = self._read()
        if not kept.access_token:
            return None
        left = None
        if kept.expires_at is not None:
            left = int((kept.expires_at - utc_now()).total_seconds())
        return OAuthToken(
            access_token=kept.access_token,
            refresh_token=kept.refresh_token,
            expires_in=left,
            scope=kept.scope,
        )

    async def set_tokens(self, tokens: Any) -> None:
        expires = None
        if tokens.expires_in is not None:
            expires = utc_now() + timedelta(seconds=tokens.expires_in)
        discovered = getattr(self.context, "oauth_metadata", None)
        self._change(
            access_token=tokens.access_token,
            refresh_token=tokens.refresh_token,
            token_type=tokens.token_type,
            scope=tokens.scope,
            expires_at=expires,
            status="authorized",
            authorization_code=None,  # used once: nothing keeps it afterwards
            **({"oauth_metadata": discovered.model_dump(mode="json")} if discovered else {}),
        )

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        kept = self._read().client_info
        return None if kept is None else OAuthClientInformationFull.model_validate(kept)

    async def set_client_info(self, client_info: Any) -> None:
        self._change(
            client_info=client_info.model_dump(mode="json", exclude_none=True),
            client_id=client_info.client_id,
        )


def _provider(
    db: Database,
    sealer: Sealer,
    session: McpOAuthSession,
    redirect_handler: Callable[[str], Any],
    callback_handler: Callable[[], Any],
) -> Any:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata, OAuthMetadata

    class Reloaded(OAuthClientProvider):
        """The SDK's client, made afresh for each call from what the row keeps. Its own
        `_initialize` restores neither the token's expiry nor the authorization server's
        metadata, so a reloaded client never refreshes an expired token (it sends it, gets
        401 and starts a whole new sign-in) and would refresh at `<server>/token` whatever
        the server's endpoint: modelcontextprotocol/python-sdk#3250 and #2492, open."""

        async def _initialize(self) -> None:
            await super()._initialize()
            tokens = self.context.current_tokens
            if tokens is not None and self.context.token_expiry_time is None:
                self.context.update_token_expiry(tokens)  # expires_in: what is left of it
            if self.context.oauth_metadata is None and session.oauth_metadata:
                self.context.oauth_metadata = OAuthMetadata.model_validate(session.oauth_metadata)

    metadata = OAuthClientMetadata.model_validate(
        {
            "client_name": CLIENT_NAME,
            "redirect_uris": [session.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_post",
        }
    )
    storage = _Storage(db, sealer, session.id)
    made = Reloaded(
        server_url=session.server_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    storage.context = made.context
    return made


def signing_in(
    db: Database,
    sealer: Sealer,
    session: McpOAuthSession,
    on_url: Callable[[str], None],
    wait_seconds: float,
) -> Any:
    """The SDK's OAuth client for a new sign-in: the authorization URL kept in the row and
    given to `on_url`; the code waited for (up to `wait_seconds`) until the callback brings
    it or fails the sign-in."""
    import anyio
    from mcp.client.auth import AuthorizationCodeResult

    async def redirect_handler(url: str) -> None:
        with db.transaction() as conn:
            found = store.get(conn, sealer, session.id, lock=True)
            if found is not None:
                store.put(conn, sealer, found.model_copy(update={"authorization_url": url}))
        on_url(url)

    async def callback_handler() -> AuthorizationCodeResult:
        deadline = time.monotonic() + wait_seconds
        while time.monotonic() < deadline:
            with db.connection() as conn:
                found = store.get(conn, sealer, session.id)
            if found is None or found.status == "error":
                raise McpSignInRequired("the OAuth authorization was refused or failed")
            if found.authorization_code:
                return AuthorizationCodeResult(code=found.authorization_code, state=found.state)
            await anyio.sleep(POLL_SECONDS)
        _fail(db, sealer, session.id)
        raise McpSignInRequired(
            f"no OAuth authorization arrived within {wait_seconds:g} s: connect again"
        )

    return _provider(db, sealer, session, redirect_handler, callback_handler)


def stored(db: Database, sealer: Sealer, server: McpServer) -> Any | None:
    """The SDK's OAuth client with the organization's latest sign-in to this server, or None
    (never signed in, or the server has a token of its own). It refreshes an expired token;
    when the server wants a new sign-in, the call fails saying so."""
    if server.auth_token or server.server_url is None:
        return None
    with db.connection() as conn:
        found = store.signed_in(conn, sealer, server.organization_id, server.server_url)
    if found is None:
        return None

    async def sign_in_again(*_: Any) -> Any:
        raise McpSignInRequired(
            f"MCP server `{server.server_name}` wants a new OAuth sign-in: "
            f"GET /v1/mcp-servers/connect/{server.id}"
        )

    return _provider(db, sealer, found, sign_in_again, sign_in_again)


def _fail(db: Database, sealer: Sealer, session_id: str) -> None:
    with db.transaction() as conn:
        found = store.get(conn, sealer, session_id, lock=True)
        if found is not None and found.status == "pending":
            store.put(conn, sealer, found.model_copy(update={"status": "error"}))


def _expected(authorization_url: str | None, state: str) -> bool:
    """Whether `state` is the one this sign-in's authorization URL carried."""
    if not authorization_url:
        return False
    sent = parse_qs(urlsplit(authorization_url).query).get("state", [""])[0]
    return bool(sent) and hmac.compare_digest(sent.encode(), state.encode())


def record_callback(
    db: Database,
    sealer: Sealer,
    session_id: str,
    *,
    code: str | None,
    state: str | None,
    error: str | None,
    error_description: str | None,
) -> dict[str, Any]:
    """The authorization server's redirect (Letta's mcp_oauth_callback and its answers): the
    code and state kept for the waiting sign-in, once; an error fails the sign-in."""
    with db.transaction() as conn:
        found = store.get(conn, sealer, session_id, lock=True)
        if found is None or found.status != "pending" or found.authorization_code:
            # Unknown, finished, or a code already brought: nothing here may be replaced.
            return {"status": "error", "message": "Invalid state parameter"}
        if not state:  # an answer, even a refusal, carries the state it was sent (RFC 6749)
            return {"status": "error", "message": "Missing authorization code or state"}
        if not _expected(found.authorization_url, state):
            # Not the authorization server's answer to this sign-in (anyone who saw the
            # session id in the redirect_uri could send one): it changes nothing, and the
            # real one still finishes the sign-in. It was taken, and spent the sign-in.
            return {"status": "error", "message": "Invalid state parameter"}
        if error or not code:
            store.put(conn, sealer, found.model_copy(update={"status": "error"}))
            if not error:
                return {"status": "error", "message": "Missing authorization code or state"}
            message = f"OAuth error: {error}" + (
                f" - {error_description}" if error_description else ""
            )
            return {"status": "error", "message": message}
        store.put(
            conn, sealer, found.model_copy(update={"authorization_code": code, "state": state})
        )
    return {
        "status": "success",
        "message": "Authorization successful",
        "server_url": found.server_url,
    }
