"""A step's (or the API's) calls to an organization's MCP server, through the official
`mcp` SDK: list its tools, call one. Streamable HTTP and SSE; every connection goes through
the outbound-address policy (`cairn.outbound`), since the URL is a tenant's. Each use opens
a session and closes it (no connection outlives a call in a Lambda environment)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from cairn import outbound

Transport = Literal["streamable_http", "sse"]


class McpError(RuntimeError):
    """The server could not be reached, or answered with an error; the message says which."""


@dataclass(frozen=True)
class McpTarget:
    url: str
    transport: Transport
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # may hold a token


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
    async def run(session: Any) -> McpResult:
        result = await session.call_tool(name, args)
        parts = []
        for item in result.content or ():
            text = getattr(item, "text", None)
            parts.append(text if text is not None else json.dumps(item.model_dump(mode="json")))
        return McpResult("\n".join(parts), bool(result.is_error))

    done: McpResult = _with_session(target, opened, timeout, run)
    return done


def _with_session(
    target: McpTarget, opened: tuple[outbound.Network, ...], timeout: float, work: Any
) -> Any:
    try:
        outbound.check(target.url, opened)
    except outbound.Refused as err:
        raise McpError(str(err)) from None
    import anyio

    async def main() -> Any:
        from mcp.client.session import ClientSession

        with anyio.fail_after(timeout):
            async with (
                _streams(target, opened, timeout) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await work(session)

    try:
        return anyio.run(main)
    except TimeoutError:
        raise McpError(
            f"the MCP server at {target.url} did not answer within {timeout:g} s"
        ) from None
    except McpError:
        raise
    except BaseException as err:  # the SDK's task groups wrap what failed
        raise McpError(f"the MCP server at {target.url} failed: {_cause(err)}") from None


@asynccontextmanager
async def _streams(
    target: McpTarget, opened: tuple[outbound.Network, ...], timeout: float
) -> AsyncIterator[Any]:
    """The transport's streams, over a client whose every connection is guarded."""
    if target.transport == "sse":
        from mcp.client.sse import sse_client

        async with sse_client(
            target.url,
            headers=target.headers,
            timeout=timeout,
            httpx_client_factory=_factory(opened),
        ) as streams:
            yield streams
        return
    from mcp.client.streamable_http import streamable_http_client

    async with (
        _factory(opened)(headers=target.headers, timeout=_timeout(timeout)) as client,
        streamable_http_client(target.url, http_client=client) as streams,
    ):
        yield streams


def _timeout(seconds: float) -> Any:
    import httpx2

    return httpx2.Timeout(seconds)


def _factory(opened: tuple[outbound.Network, ...]) -> Any:
    """The SSE transport makes its own clients: guarded ones."""

    def make(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
        import httpx2

        return httpx2.AsyncClient(
            headers=headers, timeout=timeout, auth=auth, transport=outbound.async_transport(opened)
        )

    return make


def _cause(err: BaseException) -> str:
    """The first real error inside the SDK's exception groups."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}"
