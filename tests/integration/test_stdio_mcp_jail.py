"""stdio MCP servers in the tool jail (issue 67): a real server made with the `mcp` SDK
(tests/fakes/stdio_mcp_server.py) started for each use, as root handing it to nobody and in
a user namespace; hostile ones (garbage, silence, floods, early exits, forks) end within
their bound with an error naming the server."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from cairn.mcp_servers.client import McpError, McpTarget, call_tool, list_tools
from cairn.tools.sandbox import Network, ServerLaunch
from cairn.tools.subprocess_sandbox import SubprocessSandbox
from tests.waiting import eventually

FAKES = Path(__file__).resolve().parents[1] / "fakes"
SERVER = str(FAKES / "stdio_mcp_server.py")
SECRET = "stdio-secret-0123456789"
MODES = [None] + ([True] if os.geteuid() == 0 else [])


@pytest.fixture(params=MODES, ids=lambda m: "auto" if m is None else "user-namespace")
def sandbox(request: pytest.FixtureRequest) -> SubprocessSandbox:
    box = SubprocessSandbox(user_namespace=request.param, stdio_paths=(sys.prefix, str(FAKES)))
    assert box.unavailable() is None  # namespaces work here: nothing below may pass unconfined
    return box


def use(
    box: SubprocessSandbox,
    work: object,
    *args: str,
    timeout: float = 20,
    hosts: tuple[str, ...] = (),
) -> object:
    launch = ServerLaunch(
        argv=(sys.executable, SERVER, *args),
        environment={"API_KEY": SECRET},
        network=Network("org-test", hosts),
        timeout_seconds=timeout,
    )
    with box.confined(launch) as confined:
        return work(McpTarget("local", "stdio", process=confined), timeout)  # type: ignore[operator]


def called(tool: str, **args: object) -> object:
    return lambda target, timeout: call_tool(target, tool, args, (), timeout)


def test_a_server_sees_its_env_and_nothing_of_the_hosts(
    sandbox: SubprocessSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-server-secret")
    done = use(
        sandbox,
        called(
            "probe",
            names=["API_KEY", "OPENAI_API_KEY", "DATABASE_URL"],
            paths=[__file__, "/etc/passwd", f"/proc/{os.getpid()}/environ"],
            host="1.1.1.1",
            port=80,
        ),
    )
    seen = json.loads(done.text)  # type: ignore[attr-defined]
    assert seen["env"] == {
        "API_KEY": SECRET,
        "OPENAI_API_KEY": "<unset>",
        "DATABASE_URL": "<unset>",
    }
    assert all(v.startswith("refused") for v in seen["files"].values()), seen["files"]
    assert seen["connect"].startswith("refused")  # no network at all
    assert set(seen["processes"].split()) <= {"1", "2", "3"}  # its own namespace's only


def test_an_organization_that_allows_hosts_reaches_the_egress_proxy_only(
    sandbox: SubprocessSandbox,
) -> None:
    proxy = use(sandbox, called("env", name="HTTPS_PROXY"), hosts=("example.com",))
    assert proxy.text.startswith("http://")  # type: ignore[attr-defined]
    reached = use(sandbox, called("connect", host="127.0.0.1", port=3128), hosts=("example.com",))
    assert reached.text == "connected"  # type: ignore[attr-defined]
    other = use(sandbox, called("connect", host="1.1.1.1", port=80), hosts=("example.com",))
    assert other.text.startswith("refused")  # type: ignore[attr-defined]


def test_its_tools_are_listed_and_called(sandbox: SubprocessSandbox) -> None:
    listed = use(sandbox, lambda target, timeout: list_tools(target, (), timeout))
    assert {"add", "env", "probe", "die"} <= {t.name for t in listed}  # type: ignore[attr-defined]
    assert use(sandbox, called("add", a=2, b=3)).text == "5"  # type: ignore[attr-defined]
    # Lines that are not the protocol are passed over, as the SDK does.
    listed = use(sandbox, lambda target, timeout: list_tools(target, (), timeout), "garbage")
    assert "add" in {t.name for t in listed}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("hang", "did not answer within 2 s"),
        ("exit", "failed"),
        ("flood", "stopped: over 134217728 bytes on stdout"),
        ("endless-line", "stopped: a line of over 16777216 bytes on stdout"),
    ],
)
def test_a_server_that_misbehaves_ends_within_its_bound_naming_itself(mode: str, said: str) -> None:
    box = SubprocessSandbox(stdio_paths=(sys.prefix, str(FAKES)))
    started = time.monotonic()
    with pytest.raises(McpError) as failed:
        use(box, lambda target, timeout: list_tools(target, (), timeout), mode, timeout=2)
    took = time.monotonic() - started
    assert "the stdio MCP server `local`" in str(failed.value) and said in str(failed.value)
    # The call's bound, and the SDK's grace for a process that will not close (2 s).
    assert took < 2 + 2 + 3, took


def test_a_server_that_dies_mid_call_or_forks_without_end_is_bounded() -> None:
    box = SubprocessSandbox(stdio_paths=(sys.prefix, str(FAKES)))
    with pytest.raises(McpError) as died:
        use(box, called("die"))
    assert "the stdio MCP server `local` failed" in str(died.value)
    spawned = use(box, called("spawn", count=200))
    assert "then refused" in spawned.text  # type: ignore[attr-defined]


def test_a_missing_program_says_why() -> None:
    box = SubprocessSandbox()
    launch = ServerLaunch(("/no/such/program",), {}, Network("org-test"), 5)
    with box.confined(launch) as confined, pytest.raises(McpError) as failed:
        list_tools(McpTarget("local", "stdio", process=confined), (), 5)
    assert "cannot start /no/such/program" in str(failed.value)


def test_its_environment_is_never_on_a_command_line(sandbox: SubprocessSandbox) -> None:
    """Every process of the host may read /proc/<pid>/cmdline: scanned while it runs."""
    seen: list[bytes] = []
    failures: list[McpError] = []

    def hanging() -> None:
        try:
            use(sandbox, lambda t, s: list_tools(t, (), s), "hang", timeout=4)
        except McpError as err:
            failures.append(err)

    running = threading.Thread(target=hanging, daemon=True)
    running.start()

    def jail_running() -> bool:
        seen[:] = [_cmdline(pid) for pid in os.listdir("/proc") if pid.isdigit()]
        return any(b"--exec" in line and SERVER.encode() in line for line in seen)

    eventually(jail_running, timeout=20)
    assert not any(SECRET.encode() in line for line in seen)
    running.join(timeout=30)
    assert failures and "did not answer" in str(failures[0])


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
