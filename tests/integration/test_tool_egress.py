"""Tools reach their organization's allowed hosts through the egress proxy, and nothing else.

Upstream servers here listen on 127.0.0.1, which the proxy refuses by default (not a public
address); each test that wants it reachable opens 127.0.0.0/8 as a private network, the
way an operator would for a service of their own, and one test shows the default refusal.
"""

from __future__ import annotations

import base64
import http.server
import json
import socket
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.aws.lambda_sandbox import LambdaSandbox
from cairn.adapters.local.lambdas import invoke
from cairn.domain import Organization, Tool
from cairn.errors import InvalidArgumentError, NotFoundError
from cairn.local.invoke import substitute
from cairn.services import tenants
from cairn.store import tenancy, tools
from cairn.store.db import Database
from cairn.tools import egress
from cairn.tools.sandbox import Network, SandboxRequest, SandboxResult
from cairn.tools.source import derive_schema
from cairn.tools.subprocess_sandbox import SubprocessSandbox
from tests.fakes.llm_server import FakeLLM, call
from tests.integration.engine_harness import engine_for, make_agent, send
from tests.integration.test_sandbox_hostile import MODES

LOOPBACK = ("127.0.0.0/8",)
KEY = b"test-key" * 4


class Upstream:
    """An HTTP server recording what reached it."""

    def __init__(self) -> None:
        seen: list[dict[str, str]] = []
        self.seen = seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
                body = f"upstream saw {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def returned(turn: Any) -> list[str]:
    """What the model was told each custom tool call returned."""
    return [
        json.loads(m.tool_returns[0].func_response)["message"] for m in turn.new if m.role == "tool"
    ]


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream()
    yield up
    up.server.shutdown()


@pytest.fixture
def tcp_proxy() -> Iterator[tuple[str, int]]:
    server = egress.serve(("127.0.0.1", 0), KEY, private_networks=LOOPBACK)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address  # type: ignore[misc]
    server.shutdown()


FETCH = '''
def fetch(url: str) -> str:
    """Fetch a URL.

    Args:
        url: What to fetch.
    """
    import os, urllib.error, urllib.request
    try:
        return urllib.request.urlopen(url, timeout=5).read().decode()
    except urllib.error.HTTPError as err:
        return f"HTTP {err.code}: {err.read().decode()}"
    except Exception as err:
        return f"{type(err).__name__}: {err}"
'''


def fetch(box: Any, url: str, hosts: tuple[str, ...], org: str = "org-a") -> SandboxResult:
    return box.run(
        SandboxRequest(FETCH, "fetch", {"url": url}, "call_egress", network=Network(org, hosts))
    )


def raw(address: tuple[str, int], request: bytes) -> bytes:
    with socket.create_connection(address, timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


def basic(token: str) -> str:
    return "Basic " + base64.b64encode(f"cairn:{token}".encode()).decode()


# -- the proxy itself ----------------------------------------------------------------------


def test_the_proxy_checks_the_pass_the_list_and_the_address(
    upstream: Upstream, tcp_proxy: tuple[str, int]
) -> None:
    target = f"127.0.0.1:{upstream.port}"
    token = egress.issue(KEY, "org-a", [target], 60)

    def get(auth: str | None, host: str = target) -> bytes:
        head = f"GET http://{host}/hello HTTP/1.1\r\nHost: {host}\r\n"
        head += f"Proxy-Authorization: {auth}\r\n" if auth else ""
        return raw(tcp_proxy, (head + "\r\n").encode())

    assert get(None).startswith(b"HTTP/1.1 407")
    assert get(basic("forged.pass")).startswith(b"HTTP/1.1 407")
    expired = egress.issue(KEY, "org-a", [target], -1)
    assert get(basic(expired)).startswith(b"HTTP/1.1 407")
    refused = get(basic(token), host=f"127.0.0.1:{upstream.port + 1}")
    assert refused.startswith(b"HTTP/1.1 403") and b"allow-list" in refused
    ok = get(basic(token))
    assert ok.split(b"\r\n")[0].endswith(b" 200 OK") and ok.endswith(b"upstream saw /hello")
    # The pass stops at the proxy: the upstream never sees it.
    assert upstream.seen[-1]["path"] == "/hello" and "proxy-authorization" not in upstream.seen[-1]
    assert raw(tcp_proxy, b"nonsense\r\n\r\n").startswith(b"HTTP/1.1 400")


def test_a_connect_tunnel_reaches_the_allowed_host(
    upstream: Upstream, tcp_proxy: tuple[str, int]
) -> None:
    target = f"127.0.0.1:{upstream.port}"
    token = egress.issue(KEY, "org-a", [target], 60)
    with socket.create_connection(tcp_proxy, timeout=5) as sock:
        sock.sendall(
            f"CONNECT {target} HTTP/1.1\r\nProxy-Authorization: {basic(token)}\r\n\r\n".encode()
        )
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.sendall(f"GET /tunnel HTTP/1.0\r\nHost: {target}\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.endswith(b"upstream saw /tunnel")


def test_private_addresses_are_refused_unless_opened(upstream: Upstream) -> None:
    server = egress.serve(("127.0.0.1", 0), KEY)  # the default: public addresses only
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for host in (
            f"127.0.0.1:{upstream.port}",
            f"localhost:{upstream.port}",
            "169.254.169.254:80",
            "10.0.0.1:80",
        ):
            token = egress.issue(KEY, "org-a", ["*", host], 60)
            got = raw(
                server.server_address,  # type: ignore[arg-type]
                f"GET http://{host}/ HTTP/1.1\r\nProxy-Authorization: {basic(token)}"
                "\r\n\r\n".encode(),
            )
            assert got.startswith(b"HTTP/1.1 403") and b"private or reserved" in got, host
    finally:
        server.shutdown()
    assert upstream.seen == []


# -- the local sandbox ---------------------------------------------------------------------


@pytest.fixture(params=MODES, ids=lambda m: "auto" if m is None else "user-namespace")
def box(request: pytest.FixtureRequest) -> SubprocessSandbox:
    sandbox = SubprocessSandbox(user_namespace=request.param, egress_private_networks=LOOPBACK)
    assert sandbox.unavailable() is None
    return sandbox


def test_a_jailed_tool_reaches_its_allowed_hosts_and_nothing_else(
    box: SubprocessSandbox, upstream: Upstream
) -> None:
    allowed = f"127.0.0.1:{upstream.port}"
    ok = fetch(box, f"http://{allowed}/data", (allowed,))
    assert ok.success and ok.value == "upstream saw /data", ok
    other = fetch(box, f"http://127.0.0.1:{upstream.port + 1}/", (allowed,))
    assert other.value.startswith("HTTP 403") and "org-a" in other.value
    # Without an allow-list the call has no network at all (and no proxy to ask).
    none = fetch(box, f"http://{allowed}/data", ())
    assert not none.value.startswith("upstream saw"), none
    assert [s["path"] for s in upstream.seen] == ["/data"]


def test_a_jailed_tool_cannot_go_around_the_proxy_or_widen_its_pass(
    box: SubprocessSandbox, upstream: Upstream
) -> None:
    allowed = f"127.0.0.1:{upstream.port}"
    source = textwrap.dedent(
        '''
        def probe(port: int) -> str:
            """Probe.

            Args:
                port: The upstream's port.
            """
            import base64, json, os, socket
            out = {}
            try:  # straight to the upstream, past the proxy
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                out["direct"] = "connected"
            except OSError as err:
                out["direct"] = type(err).__name__
            token = os.environ["HTTPS_PROXY"].split("//")[1].split("@")[0].split(":", 1)[1]
            body, _, signature = token.partition(".")
            data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            data["h"], data["o"] = ["*"], "org-b"  # a wider list, another organization
            forged = base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
            for name, t in (("forged", forged + "." + signature), ("own", token)):
                auth = base64.b64encode(f"cairn:{t}".encode()).decode()
                s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
                s.sendall(f"GET http://127.0.0.1:{port + 1}/ HTTP/1.1\\r\\n"
                          f"Proxy-Authorization: Basic {auth}\\r\\n\\r\\n".encode())
                out[name] = s.recv(4096).decode().split("\\r\\n")[0]
            return json.dumps(out)
        '''
    )
    network = Network("org-a", (allowed,))
    result = box.run(
        SandboxRequest(source, "probe", {"port": upstream.port}, "call_probe", network=network)
    )
    found = json.loads(result.value)
    assert found["direct"] != "connected"
    assert "407" in found["forged"] and "403" in found["own"], found
    assert upstream.seen == []


# -- an organization's allow-list, end to end -----------------------------------------------


def test_the_allow_list_is_the_operators_and_is_checked(
    db: Database, org: Organization, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(InvalidArgumentError, match="not a host pattern"):
        tenants.set_tool_hosts(db, org.id, ["https://x.com/"])
    with pytest.raises(InvalidArgumentError, match="a list"):
        tenants.set_tool_hosts(db, org.id, "x.com")
    with pytest.raises(NotFoundError):
        tenants.set_tool_hosts(db, "org-missing", ["x.com"])
    # The migrate function carries the operator's action on AWS (and `make invoke` locally),
    # here with the sample event.
    monkeypatch.setenv("DATABASE_URL", pg_dsn)
    sample = (Path(__file__).parents[2] / "events/migrate/set-tool-hosts.json").read_text()
    done = invoke("migrate", substitute(sample, {"ORG_ID": org.id}))
    assert done == {"organization_id": org.id, "tool_hosts": ["api.github.com", "*.wikipedia.org"]}
    with db.connection() as conn:
        assert tenancy.tool_hosts(conn, org.id) == ("api.github.com", "*.wikipedia.org")


def test_a_step_runs_a_tool_that_reaches_its_organizations_host(
    db: Database, org: Organization, fake: FakeLLM, upstream: Upstream
) -> None:
    with db.connection() as conn:
        tools.upsert(
            conn,
            Tool(
                organization_id=org.id,
                name="fetch",
                tool_type="custom",
                source_code=FETCH,
                json_schema=derive_schema(FETCH),
            ),
        )
    agent = make_agent(db, org, tool_names=["fetch"])
    engine = engine_for(db, fake, sandbox=SubprocessSandbox(egress_private_networks=LOOPBACK))
    url = f"http://127.0.0.1:{upstream.port}/for-the-agent"
    fake.reply("", call("fetch", url=url)).reply("done")
    before = returned(send(engine, agent, "fetch it"))
    assert len(before) == 1 and "upstream saw" not in before[0]  # no list yet: no network
    tenants.set_tool_hosts(db, org.id, [f"127.0.0.1:{upstream.port}"])
    fake.reply("", call("fetch", url=url)).reply("done")
    after = returned(send(engine, agent, "fetch it again"))
    assert after == ["upstream saw /for-the-agent"]


# -- on AWS: the caller signs, the sandbox function hands the proxy to the tool -------------


def test_the_lambda_sandbox_signs_a_pass_only_for_an_allow_list(
    upstream: Upstream, tcp_proxy: tuple[str, int]
) -> None:
    sent: list[dict[str, Any]] = []

    class Client:  # stands for boto3's Lambda client; the handler is our real one
        def invoke(self, FunctionName: str, Payload: str) -> dict[str, Any]:
            sent.append(json.loads(Payload))
            body = json.dumps(invoke("sandbox", sent[-1])).encode()
            return {"Payload": __import__("io").BytesIO(body)}

    host, port = tcp_proxy
    sandbox = LambdaSandbox("cairn-sandbox", Client(), proxy=f"{host}:{port}", key=lambda: KEY)
    allowed = f"127.0.0.1:{upstream.port}"
    ok = fetch(sandbox, f"http://{allowed}/via-lambda", (allowed,))
    assert ok.success and ok.value == "upstream saw /via-lambda"
    granted = egress.verify(KEY, sent[-1]["proxy_url"].split(":")[2].split("@")[0])
    assert granted is not None and granted.hosts == (allowed,)
    assert granted.organization_id == "org-a"
    refused = fetch(sandbox, f"http://127.0.0.1:{upstream.port + 1}/", (allowed,))
    assert refused.value.startswith("HTTP 403")
    # No list, no pass (what walls the call in on AWS is the function's security group,
    # tests/infra; this host's network is open to a process-mode tool).
    fetch(sandbox, f"http://127.0.0.1:{upstream.port + 1}/", ())
    assert "proxy_url" not in sent[-1]
    assert [s["path"] for s in upstream.seen] == ["/via-lambda"]
