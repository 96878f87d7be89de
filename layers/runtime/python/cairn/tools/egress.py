"""The tool sandbox's only way out: an HTTP proxy that lets a call reach its organization's
allowed hosts and nothing else.

A sandboxed call has no network of its own. When its organization has an allow-list, the
caller signs a short-lived *pass* naming the organization, its allowed hosts and an expiry
(HMAC-SHA256 with a key the tool never sees), and the tool gets `HTTP(S)_PROXY` pointing here
with the pass as its password. For each `CONNECT host:port` (HTTPS) or absolute-URI request
(plain HTTP) the proxy checks the pass, matches the host against the pass's list, resolves
the name itself and connects only to a public address (never loopback, private, link-local
or the instance metadata service, whatever the DNS answer), so the list cannot be used to
reach the deployment's own network. The tool can read its own pass; it opens only what its
organization is allowed anyway, and only until the call's time limit.

Locally the proxy listens on a Unix socket that the jail binds into each call's namespaces
(`tools/jail.py` relays 127.0.0.1:3128 to it). On AWS it runs as a small Fargate service the
sandbox function alone may reach (`infra`, context flag `tool_network`), started as
`python egress.py` with `CAIRN_EGRESS_KEY` in its environment.

Standard library only: the proxy container holds this file and nothing else of Cairn.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import selectors
import socket
import socketserver
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

logger = logging.getLogger("cairn.egress")

# Inside each jail the tool's HTTP(S)_PROXY points here; the jail relays it to the socket.
JAIL_PORT = 3128
JAIL_SOCKET = "/run/cairn-egress.sock"
HEAD_BYTES = 16 * 1024
CONNECT_SECONDS = 10.0
IDLE_SECONDS = 60.0
# `host`, `*.domain` (its subdomains), `*` (any public host), each with an optional `:port`
# (without one: 443 and 80).
HOST_PATTERN = re.compile(
    r"^(\*|(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*)"
    r"(:[0-9]{1,5})?$"
)
MAX_HOSTS = 100


def check_hosts(hosts: Iterable[str]) -> list[str]:
    """An allow-list as stored: lower case, unique, each entry a valid pattern (ValueError)."""
    kept: list[str] = []
    for raw in hosts:
        host = str(raw).strip().lower()
        port = host.rpartition(":")[2] if ":" in host else None
        if not HOST_PATTERN.match(host) or (port is not None and not 0 < int(port) < 65536):
            raise ValueError(
                f"{raw!r} is not a host pattern: use `api.example.com`, `*.example.com` or `*`, "
                "with `:port` for a port other than 443 and 80"
            )
        if host not in kept:
            kept.append(host)
    if len(kept) > MAX_HOSTS:
        raise ValueError(f"at most {MAX_HOSTS} hosts, not {len(kept)}")
    return kept


def allowed(host: str, port: int, patterns: Iterable[str]) -> bool:
    host = host.lower().rstrip(".")
    for pattern in patterns:
        name, _, fixed = pattern.partition(":")
        if (int(fixed) != port) if fixed else port not in (80, 443):
            continue
        if name == "*" or name == host:
            return True
        if name.startswith("*.") and host.endswith(name[1:]):
            return True
    return False


@dataclass(frozen=True)
class Pass:
    organization_id: str
    hosts: tuple[str, ...]
    expires: float


def issue(key: bytes, organization_id: str, hosts: Sequence[str], seconds: float) -> str:
    body = json.dumps(
        {"o": organization_id, "h": list(hosts), "e": round(time.time() + seconds)},
        separators=(",", ":"),
    ).encode()
    signature = hmac.new(key, body, hashlib.sha256).digest()
    return f"{_b64(body)}.{_b64(signature)}"


def verify(key: bytes, token: str, now: float | None = None) -> Pass | None:
    """The pass `token` carries, or None if it is forged, malformed or expired."""
    try:
        body_part, _, signature_part = token.partition(".")
        body, signature = _unb64(body_part), _unb64(signature_part)
        if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).digest(), signature):
            return None
        data = json.loads(body)
        granted = Pass(str(data["o"]), tuple(str(h) for h in data["h"]), float(data["e"]))
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None
    return granted if granted.expires > (time.time() if now is None else now) else None


def proxy_url(token: str, host: str = "127.0.0.1", port: int = JAIL_PORT) -> str:
    return f"http://cairn:{token}@{host}:{port}"


def tool_environment(url: str) -> dict[str, str]:
    """What a tool's environment needs for HTTP libraries (urllib, requests, httpx) to use
    the proxy."""
    return {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class _Refused(Exception):
    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


class _Handler(socketserver.BaseRequestHandler):
    server: _Serving  # type: ignore[assignment]

    def handle(self) -> None:
        client: socket.socket = self.request
        client.settimeout(IDLE_SECONDS)
        try:
            head, rest = _read_head(client)
            method, target, headers = _parse(head)
            granted = self._authorize(headers)
            host, port, upstream_head = _destination(method, target, head)
            if not allowed(host, port, granted.hosts):
                raise _Refused(
                    "403 Forbidden",
                    f"{host}:{port} is not in organization {granted.organization_id}'s "
                    "allow-list for tools",
                )
            upstream = self._connect(host, port)
        except _Refused as refused:
            logger.info("egress refused: %s", refused)
            _answer(client, refused.status, str(refused))
            return
        except (OSError, ValueError) as err:
            _answer(client, "400 Bad Request", f"not a proxy request: {err}")
            return
        logger.info("egress %s:%s for %s", host, port, granted.organization_id)
        with upstream:
            if upstream_head is None:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.sendall(upstream_head)
            if rest:
                upstream.sendall(rest)
            relay(client, upstream, until=granted.expires)

    def _authorize(self, headers: dict[str, str]) -> Pass:
        scheme, _, credentials = headers.get("proxy-authorization", "").partition(" ")
        token = ""
        if scheme.lower() == "basic":
            try:
                token = base64.b64decode(credentials).decode().partition(":")[2]
            except (binascii.Error, UnicodeDecodeError):
                token = ""
        granted = verify(self.server.key, token) if token else None
        if granted is None:
            raise _Refused("407 Proxy Authentication Required", "no valid pass for this call")
        return granted

    def _connect(self, host: str, port: int) -> socket.socket:
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as err:
            raise _Refused("502 Bad Gateway", f"{host} does not resolve: {err}") from None
        addresses = [info for info in found if self.server.reachable(str(info[4][0]))]
        if not addresses:
            raise _Refused(
                "403 Forbidden", f"{host} resolves only to private or reserved addresses"
            )
        family, kind, proto, _, address = addresses[0]
        upstream = socket.socket(family, kind, proto)
        upstream.settimeout(CONNECT_SECONDS)
        try:
            # The address checked above, not the name again: a second DNS answer could differ.
            upstream.connect(address)
        except OSError as err:
            upstream.close()
            raise _Refused("502 Bad Gateway", f"{host}:{port} did not answer: {err}") from None
        return upstream


class _Serving:
    key: bytes
    private: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    def reachable(self, address: str) -> bool:
        # The rule of cairn.outbound (a unit test holds the two to one table of addresses).
        ip = ipaddress.ip_address(address.partition("%")[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        public = ip.is_global and not ip.is_multicast
        return public or any(ip in network for network in self.private)


class UnixProxy(_Serving, socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class TcpProxy(_Serving, socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(
    address: str | tuple[str, int], key: bytes, *, private_networks: Sequence[str] = ()
) -> UnixProxy | TcpProxy:
    """A proxy on a Unix socket path (readable by the jail's nobody) or a TCP address;
    `private_networks` opens non-public ranges (tests; a deliberate operator's choice)."""
    server: UnixProxy | TcpProxy
    if isinstance(address, str):
        server = UnixProxy(address, _Handler)
        os.chmod(address, 0o666)  # the pass is the lock, not the socket's mode
    else:
        server = TcpProxy(address, _Handler)
    server.key = key
    server.private = tuple(ipaddress.ip_network(n) for n in private_networks)
    return server


def relay(one: socket.socket, other: socket.socket, *, until: float) -> None:
    """Copy bytes both ways until either side closes, stays idle, or the pass expires."""
    selector = selectors.DefaultSelector()
    pairs = {one: other, other: one}
    for sock in pairs:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    try:
        while time.time() < until:
            ready = selector.select(timeout=min(IDLE_SECONDS, max(until - time.time(), 0)))
            if not ready:
                return
            for found, _ in ready:
                source: socket.socket = found.fileobj  # type: ignore[assignment]
                try:
                    data = source.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                if not data:
                    return
                target = pairs[source]
                target.setblocking(True)
                target.sendall(data)
                target.setblocking(False)
    except OSError:
        return
    finally:
        selector.close()


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(4096)
        if not chunk:
            raise ValueError("the request ended before its headers")
        data += chunk
        if len(data) > HEAD_BYTES:
            raise ValueError(f"request headers over {HEAD_BYTES} bytes")
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _parse(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return method.upper(), target, headers


def _destination(method: str, target: str, head: bytes) -> tuple[str, int, bytes | None]:
    """Host, port and what to send upstream first (None for a CONNECT tunnel)."""
    if method == "CONNECT":
        name, _, number = target.rpartition(":")
        return name.strip("[]"), int(number), None
    match = re.match(r"^http://([^/:?#]+|\[[^\]]+\])(?::(\d+))?([^ ]*)$", target, re.I)
    if not match:
        raise ValueError(f"only CONNECT and http:// requests, not {target[:80]!r}")
    host, port, path = match.group(1).strip("[]"), int(match.group(2) or 80), str(match.group(3))
    lines = head.decode("latin-1").split("\r\n")
    kept = [f"{method} {path or '/'} {lines[0].rsplit(' ', 1)[-1]}"]
    for line in lines[1:]:
        name = line.partition(":")[0].strip().lower()
        # The pass goes no further than here; one request per connection keeps it simple.
        if line and name not in ("proxy-authorization", "proxy-connection", "connection"):
            kept.append(line)
    kept.append("Connection: close")
    return host, port, ("\r\n".join(kept) + "\r\n\r\n").encode("latin-1")


def _answer(client: socket.socket, status: str, reason: str) -> None:
    body = json.dumps({"detail": reason}).encode()
    extra = 'Proxy-Authenticate: Basic realm="cairn"\r\n' if status.startswith("407") else ""
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError):
        client.sendall(head.encode() + body)


def main() -> int:
    """The proxy service on AWS: `CAIRN_EGRESS_KEY` signs passes, it listens on 3128."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    key = os.environ.get("CAIRN_EGRESS_KEY", "").encode()
    if not key:
        print("CAIRN_EGRESS_KEY is not set", file=sys.stderr)
        return 2
    port = int(os.environ.get("CAIRN_EGRESS_PORT", JAIL_PORT))
    with serve(("0.0.0.0", port), key) as server:  # its security group admits only the sandbox
        logger.info("egress proxy listening on %s", port)
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
