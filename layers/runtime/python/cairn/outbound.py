"""The one outbound-address policy: where the server may connect for a URL a tenant gave it
(an agent's model or embedding endpoint, a provider's `base_url`, its key check and model
listing).

Public addresses only, whatever DNS answers: loopback, private, link-local (the instance
metadata service), shared, reserved and multicast addresses are refused unless the operator
opens a network (`CAIRN_OUTBOUND_NETWORKS`, e.g. `10.0.0.0/8` for a model server of their
own). The check happens twice: `check` before a call (a clear error, no request made), and
again on every connection the call's HTTP client opens (`transport`), to the very address
checked, so a second DNS answer (rebinding) or a redirect cannot lead elsewhere.

The tools' egress proxy (`tools/egress.py`, standard library only, shipped alone) applies
the same rule (`is_global` or an opened network); a unit test holds the two to one table.
URLs the operator configured (OPENAI_BASE_URL and the like) are the operator's own choice
and are not checked.
"""

from __future__ import annotations

import importlib
import ipaddress
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from cairn.errors import noted

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Refused(ValueError):
    """A URL the policy will not reach; the message says which and why."""


@lru_cache(maxsize=8)
def networks(spec: str) -> tuple[Network, ...]:
    """`CAIRN_OUTBOUND_NETWORKS` (comma-separated CIDRs) parsed; ValueError names a bad one."""
    found = []
    for part in (p.strip() for p in spec.split(",")):
        if part:
            try:
                found.append(ipaddress.ip_network(part, strict=False))
            except ValueError:
                raise ValueError(f"`{part}` is not a network (e.g. 10.0.0.0/8)") from None
    return tuple(found)


def reachable(address: str, opened: Iterable[Network] = ()) -> bool:
    ip = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is loopback, not a public v6 address
    return (ip.is_global and not ip.is_multicast) or any(ip in network for network in opened)


def resolve(host: str, port: int, opened: tuple[Network, ...]) -> list[tuple[Any, ...]]:
    """The addresses `host` may be reached at: all it resolves to, if every one is allowed
    (a name that also points inside is refused whole, not tried address by address)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise Refused(f"`{host}` does not resolve: {err}") from None
    inside = sorted({str(info[4][0]) for info in found if not reachable(str(info[4][0]), opened)})
    if inside or not found:
        raise Refused(
            f"`{host}` resolves to {', '.join(inside) or 'nothing'}: the server reaches only "
            "public addresses for a URL it was given"
        )
    return found


def check(url: str, opened: tuple[Network, ...]) -> None:
    """Raise Refused unless `url` is http(s) to a host the policy reaches."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as err:
        raise Refused(f"`{url}` is not a URL: {err}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused(f"`{url}` is not an http(s) URL")
    resolve(parts.hostname, port, opened)


def check_written(url: str, opened: tuple[Network, ...]) -> None:
    """What `check` can say of a URL before it is reached, with no DNS lookup: Refused unless
    it is http(s) with a host, and that host, when written as an address, is one the policy
    reaches. (A name is checked when it is reached: it may not resolve yet.)"""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError as err:
        raise Refused(f"`{url}` is not a URL: {err}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused(f"`{url}` is not an http(s) URL")
    try:
        written = ipaddress.ip_address(parts.hostname)
    except ValueError:
        return
    if not reachable(str(written), opened):
        raise Refused(
            f"`{parts.hostname}`: the server reaches only public addresses for a URL it was given"
        )


# The HTTP stacks the SDKs are built on: OpenAI's and Anthropic's on httpx2 (and refuse an
# httpx client), Google's on httpx. Each gets a client of its own kind.
STACKS = {"httpx": "httpcore", "httpx2": "httpcore2"}


# How long an idle connection to a model's server is kept for the next call (httpx's default
# is 5 s). A chat's messages mostly come further apart than that, and each new connection is a
# TLS handshake: round trips, and 0.6 -> 1.5 ms of the client's CPU for a request even to a
# local server with one short certificate (bench/model_connection.py). Below the idle
# timeouts of the providers' load balancers (60 s and up); a connection the server closed
# sooner is seen closed by httpcore and never reused.
KEEPALIVE_SECONDS = 30.0


def pooled(stack: str = "httpx") -> Any:
    """A plain transport of `stack` with httpx's pool sizes and KEEPALIVE_SECONDS."""
    http = importlib.import_module(stack)
    limits = http.Limits(
        max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_SECONDS
    )
    return http.HTTPTransport(limits=limits)


# The most of an answer read from a URL an organization gave (its model's, its embedding
# server's): a model's answer is at most a few MB (a reply of 128,000 tokens is about half a
# MB of JSON; 128 vectors of 3,072 numbers written out as text, about 8 MB). Past it the
# server is broken or hostile, and reading on would take the worker's memory, which in
# `make dev`'s one process is every organization's.
MAX_ANSWER_BYTES = 64 * 1024 * 1024


def transport(opened: tuple[Network, ...], stack: str = "httpx") -> Any:
    """A transport of `stack` (httpx or httpx2) whose every connection goes through the
    policy, and whose answers are read to MAX_ANSWER_BYTES at most: for the SDK clients
    that call an organization's URL."""
    core = importlib.import_module(STACKS[stack])

    class Guarded(core.SyncBackend):  # type: ignore[misc,name-defined]
        def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
            try:
                address = resolve(host, port, opened)[0][4][0]
            except Refused as err:
                raise core.ConnectError(str(err)) from None
            # The address checked, not the name again; TLS still verifies `host` (SNI).
            return super().connect_tcp(str(address), port, *args, **kwargs)

    made = pooled(stack)
    # The transport takes no network backend; the connection pool it wraps does.
    made._pool._network_backend = Guarded()
    return _capped(made, stack)


def _capped(inner: Any, stack: str) -> Any:
    """`inner` with each answer's body cut past MAX_ANSWER_BYTES: the stack's ReadError,
    which the SDKs report as a connection error (`cut` says why)."""
    http = importlib.import_module(stack)

    class Counted(http.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, stream: Any) -> None:
            self._stream = stream

        def __iter__(self) -> Iterator[bytes]:
            read = 0
            for chunk in self._stream:
                read += len(chunk)
                if read > MAX_ANSWER_BYTES:
                    err = http.ReadError(
                        f"the server's answer passed {MAX_ANSWER_BYTES:,} bytes, the most"
                        " read from a URL an organization gave"
                    )
                    err.cut = str(err)
                    raise err
                yield chunk

        def close(self) -> None:
            self._stream.close()

    class Capped(http.BaseTransport):  # type: ignore[misc,name-defined]
        def handle_request(self, request: Any) -> Any:
            response = inner.handle_request(request)
            response.stream = Counted(response.stream)
            return response

        def close(self) -> None:
            inner.close()

    return Capped()


def cut(err: BaseException) -> str | None:
    """Why an answer was cut short (MAX_ANSWER_BYTES), if `err` came of that (the SDKs
    report it as "Connection error.")."""
    return noted(err, "cut")


def http_client(opened: tuple[Network, ...], timeout: float, stack: str = "httpx") -> Any:
    """A client of `stack` for an SDK, guarded; redirects followed as the SDKs do, each
    one's connection checked again."""
    http = importlib.import_module(stack)
    return http.Client(transport=transport(opened, stack), timeout=timeout, follow_redirects=True)


def async_transport(opened: tuple[Network, ...], stack: str = "httpx2") -> Any:
    """`transport` for an asynchronous client (the MCP SDK's): every connection it opens
    goes to an address the policy reaches, the one checked."""
    http, core = importlib.import_module(stack), importlib.import_module(STACKS[stack])

    class Guarded(core.AnyIOBackend):  # type: ignore[misc,name-defined]
        async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
            try:
                address = resolve(host, port, opened)[0][4][0]
            except Refused as err:
                raise core.ConnectError(str(err)) from None
            return await super().connect_tcp(str(address), port, *args, **kwargs)

    made = http.AsyncHTTPTransport()
    made._pool._network_backend = Guarded()
    return made


class FetchFailed(RuntimeError):
    """A URL's answer was an error status, or it could not be reached or read (the message
    says which)."""


@dataclass(frozen=True)
class Fetched:
    body: bytes  # at most the limit asked for
    media_type: str  # the Content-Type's type, lower-case ("" when none was given)
    encoding: str | None  # as httpx reads it from the answer
    truncated: bool  # the answer went on past the limit


def fetch_bytes(
    url: str,
    opened: tuple[Network, ...],
    *,
    limit: int,
    timeout: float,
    headers: dict[str, str] | None = None,
) -> Fetched:
    """GET a URL anyone gave: the policy checked first (Refused), every connection and
    redirect checked again, at most `limit` bytes read within `timeout` for the whole
    transfer; FetchFailed for an answer of 400 or more, a connection that fails, or a
    transfer not done in time (httpx's timeouts are per read: a server sending a byte
    every few seconds once held a request for 98 s under a 10 s timeout)."""
    check(url, opened)
    import httpx

    ends = time.monotonic() + timeout
    try:
        with (
            http_client(opened, timeout) as client,
            client.stream("GET", url, headers=headers or {}) as answer,
        ):
            if answer.status_code >= 400:
                raise FetchFailed(f"{url} answered {answer.status_code}")
            body = bytearray()
            for chunk in answer.iter_bytes():
                if time.monotonic() > ends:
                    raise FetchFailed(f"{url} did not finish sending within {timeout:g} s")
                body += chunk
                if len(body) > limit:
                    break
            media = answer.headers.get("content-type", "").split(";")[0].strip().lower()
            return Fetched(bytes(body[:limit]), media, answer.encoding, len(body) > limit)
    except httpx.HTTPError as err:
        raise FetchFailed(f"{type(err).__name__}: {err}") from None
