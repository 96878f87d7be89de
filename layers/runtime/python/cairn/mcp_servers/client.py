"""A step's (or the API's) calls to an organization's MCP server, through the official
`mcp` SDK: list its tools, call one. Streamable HTTP and SSE, every connection through the
outbound-address policy (`cairn.outbound`), since the URL is a tenant's; or stdio, the
server's program started in the tool sandbox (`McpTarget.process`: the command that
confines it, or on AWS the sandbox function, which makes the whole use). Each use opens a
session and closes it (no connection or process outlives a call in a Lambda environment).
A server that signs its users in with OAuth is reached with `McpTarget.auth`, the SDK's
OAuth client (mcp_servers/oauth.py); one that answers 401 without it raises
`McpSignInRequired`."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from cairn import outbound
from cairn.tools.sandbox import Confined

Transport = Literal["streamable_http", "sse", "stdio"]
# What a stdio server wrote to stderr, kept to say why it failed: its last lines only.
STDERR_TAIL_CHARS = 500


class McpError(RuntimeError):
    """The server could not be reached, or answered with an error; the message says which."""


class McpSignInRequired(McpError):
    """The server answered 401 Unauthorized: it wants a token (an OAuth sign-in)."""


@dataclass(frozen=True)
class McpTarget:
    url: str  # a stdio server's: its name, for what is said of it
    transport: Transport
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # may hold a token
    auth: Any = field(default=None, repr=False)  # an httpx2.Auth: the SDK's OAuth client
    process: Confined | None = field(default=None, repr=False)  # a stdio server's command

    @property
    def named(self) -> str:
        if self.transport == "stdio":
            return f"the stdio MCP server `{self.url}`"
        return f"the MCP server at {self.url}"


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class McpResult:
    text: str
    is_error: bool


def list_tools(
    target: McpTarget, opened: tuple[outbound.Network, ...], timeout: float
) -> list[McpTool]:
    if target.process is not None and target.process.remote is not None:
        answer = _remotely(target, {"use": "list_tools"})
        return [McpTool(t["name"], t["description"], t["input_schema"]) for t in answer["tools"]]

    async def run(session: Any) -> list[McpTool]:
        listed = await session.list_tools()
        return [
            McpTool(t.name, t.description or "", dict(t.input_schema or {})) for t in listed.tools
        ]

    found: list[McpTool] = _with_session(target, opened, timeout, run)
    return found


def call_tool(
    target: McpTarget,
    name: str,
    args: dict[str, Any],
    opened: tuple[outbound.Network, ...],
    timeout: float,
) -> McpResult:
    if target.process is not None and target.process.remote is not None:
        use = {"use": "call_tool", "tool": name, "arguments": args}
        answered = _remotely(target, use)["result"]
        return McpResult(str(answered["text"]), bool(answered["is_error"]))

    async def run(session: Any) -> McpResult:
        result = await session.call_tool(name, args)
        parts = []
        for item in result.content or ():
            text = getattr(item, "text", None)
            parts.append(text if text is not None else json.dumps(item.model_dump(mode="json")))
        return McpResult("\n".join(parts), bool(result.is_error))

    done: McpResult = _with_session(target, opened, timeout, run)
    return done


def _remotely(target: McpTarget, use: dict[str, Any]) -> dict[str, Any]:
    """One use made whole where the sandbox is (`functions/sandbox` runs `list_tools` or
    `call_tool` there with a local command): {"tools": [...]}, {"result": {...}}, or
    {"error": why}, which is raised here as it was there."""
    assert target.process is not None and target.process.remote is not None
    answer = target.process.remote({**use, "name": target.url})
    if "error" in answer:
        raise McpError(str(answer["error"]))
    return answer


def _with_session(
    target: McpTarget, opened: tuple[outbound.Network, ...], timeout: float, work: Any
) -> Any:
    if target.transport != "stdio":
        try:
            outbound.check(target.url, opened)
        except outbound.Refused as err:
            raise McpError(str(err)) from None
    import tempfile

    import anyio

    statuses: list[int] = []  # every answer's status: the SDK's errors do not say 401

    async def main(errlog: Any) -> Any:
        from mcp.client.session import ClientSession

        with anyio.fail_after(timeout):
            async with (
                _streams(target, _Guarded(opened, statuses), timeout, errlog) as (
                    read,
                    write,
                    *_,
                ),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await work(session)

    if target.transport != "stdio":
        return _run(main, None, target, timeout, statuses)
    # A stdio server's stderr goes to a file (never our logs: it is a tenant's program, and
    # its size is bounded by the sandbox's file limit); its end says why it failed.
    with tempfile.TemporaryFile("w+", errors="replace") as errlog:
        try:
            return _run(main, errlog, target, timeout, statuses)
        except McpError as err:
            errlog.seek(0)
            if said := errlog.read()[-STDERR_TAIL_CHARS:].strip():
                raise type(err)(f"{err} (its stderr ends: {said})") from None
            raise


def _run(main: Any, errlog: Any, target: McpTarget, timeout: float, statuses: list[int]) -> Any:
    import anyio

    try:
        return anyio.run(main, errlog)
    except TimeoutError:
        raise McpError(f"{target.named} did not answer within {timeout:g} s") from None
    except McpError:
        raise
    except BaseException as err:  # the SDK's task groups wrap what failed
        if isinstance(inner := _innermost(err), McpSignInRequired):
            raise inner from None  # the stored sign-in's own word (mcp_servers/oauth.py)
        if type(inner).__module__.startswith("mcp.client.auth"):  # the SDK's OAuth errors
            raise McpError(f"the OAuth sign-in to {target.url} failed: {inner}") from None
        if (refused := _refused(err)) is not None:  # its authorization server, say
            raise McpError(
                f"the MCP server at {target.url} needs an address refused: {refused}"
            ) from None
        if 401 in statuses:
            raise McpSignInRequired(
                f"the MCP server at {target.url} answered 401 Unauthorized: it needs a token "
                "or an OAuth sign-in"
            ) from None
        raise McpError(f"{target.named} failed: {_cause(err)}") from None


@dataclass(frozen=True)
class _Guarded:
    """How the transport's HTTP clients are made: through the outbound-address policy,
    noting each answer's status."""

    opened: tuple[outbound.Network, ...]
    statuses: list[int]


@asynccontextmanager
async def _streams(
    target: McpTarget, guarded: _Guarded, timeout: float, errlog: Any
) -> AsyncIterator[Any]:
    """The transport's streams: a confined process's pipes, or a client whose every
    connection is guarded."""
    if target.transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        _quiet_stdio_parse_errors()

        assert target.process is not None, "a stdio target carries its confined command"
        command, *args = target.process.command
        started = StdioServerParameters(command=command, args=args, env=target.process.environment)
        async with stdio_client(started, errlog=errlog) as streams:
            yield streams
        return
    if target.transport == "sse":
        from mcp.client.sse import sse_client

        async with sse_client(
            target.url,
            headers=target.headers,
            timeout=timeout,
            httpx_client_factory=_factory(guarded),
            auth=target.auth,
        ) as streams:
            yield streams
        return
    from mcp.client.streamable_http import streamable_http_client

    make = _factory(guarded)
    async with (
        make(headers=target.headers, timeout=_timeout(timeout), auth=target.auth) as client,
        streamable_http_client(target.url, http_client=client) as streams,
    ):
        yield streams


class _NoParseErrors(logging.Filter):
    """The SDK logs each line a stdio server writes that is not JSON-RPC, with the line in
    it: a tenant's program would write into our logs (a flood of them, or its secrets)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Failed to parse JSONRPC message")


_PARSE_ERRORS = _NoParseErrors()


def _quiet_stdio_parse_errors() -> None:
    logging.getLogger("mcp.client.stdio").addFilter(_PARSE_ERRORS)  # once: a set of filters


def _timeout(seconds: float) -> Any:
    import httpx2

    return httpx2.Timeout(seconds)


def _factory(guarded: _Guarded) -> Any:
    """The SSE transport makes its own clients: guarded ones."""

    async def noted(response: Any) -> None:
        guarded.statuses.append(response.status_code)

    def make(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
        import httpx2

        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout,
            auth=auth,
            transport=outbound.async_transport(guarded.opened),
            event_hooks={"response": [noted]},
        )

    return make


def _innermost(err: BaseException) -> BaseException:
    """The first real error inside the SDK's exception groups."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return err


def _refused(err: BaseException, seen: int = 0) -> outbound.Refused | None:
    """The policy's refusal anywhere in what failed (the SDK swallows a refused OAuth
    discovery or token request and goes on to report the server's 401: the user was told
    to sign in to a server nobody could sign in to from here)."""
    if isinstance(err, outbound.Refused):
        return err
    if seen > 20:
        return None
    inside = list(err.exceptions) if isinstance(err, BaseExceptionGroup) else []
    for nested in (*inside, err.__cause__, err.__context__):
        if nested is not None and (found := _refused(nested, seen + 1)) is not None:
            return found
    return None


def _cause(err: BaseException) -> str:
    inner = _innermost(err)
    return f"{type(inner).__name__}: {inner}"
