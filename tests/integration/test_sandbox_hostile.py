"""Hostile tools against the local sandbox: each probe once got through (issue: hardening).

Run in both ways the sandbox isolates: as root handing the tool to nobody, and in a user
namespace (what a server that is not root gets), where root can try both.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from cairn.store.db import Database
from cairn.tools.sandbox import SandboxRequest, SandboxResult
from cairn.tools.subprocess_sandbox import SubprocessSandbox
from tests.waiting import eventually

MODES = [None] + ([True] if os.geteuid() == 0 else [])


@pytest.fixture(params=MODES, ids=lambda m: "auto" if m is None else "user-namespace")
def sandbox(request: pytest.FixtureRequest) -> SubprocessSandbox:
    box = SubprocessSandbox(memory_bytes=256 * 1024 * 1024, user_namespace=request.param)
    assert box.unavailable() is None  # namespaces work here: nothing below may pass unconfined
    return box


def run(box: SubprocessSandbox, body: str, timeout: float = 5, **args: object) -> SandboxResult:
    source = (
        "def probe(" + ", ".join(args) + "):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    )
    return box.run(
        SandboxRequest(source, "probe", dict(args), "call_hostile", timeout_seconds=timeout)
    )


def value(result: SandboxResult) -> object:
    assert result.success, (result.value, result.stderr)
    return json.loads(result.value)


def test_no_process_environment_or_memory_of_the_server_can_be_read(
    sandbox: SubprocessSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-server-secret")
    found = value(
        run(
            sandbox,
            """
            import os
            seen = {}
            for pid in [p for p in os.listdir("/proc") if p.isdigit()] + [str(server)]:
                for part in ("environ", "cmdline", "mem"):
                    try:
                        with open(f"/proc/{pid}/{part}", "rb") as f:
                            seen[f"{pid}/{part}"] = f.read(4096).decode("latin-1")
                    except OSError as err:
                        seen[f"{pid}/{part}"] = type(err).__name__
            return {"pids": sorted(os.listdir("/proc")), "seen": seen, "env": dict(os.environ)}
            """,
            server=os.getpid(),
        )
    )
    assert isinstance(found, dict)
    assert "sk-server-secret" not in json.dumps(found)
    assert [p for p in found["pids"] if p.isdigit()] == ["1"]  # its own namespace: itself only
    assert found["seen"][f"{os.getpid()}/environ"] == "FileNotFoundError"
    assert set(found["env"]) <= {"PATH", "LANG", "HOME", "TMPDIR", "CAIRN_TOOL_CALL_ID"}


def test_a_tool_cannot_read_the_secrets_of_another_call_running_beside_it(
    sandbox: SubprocessSandbox,
) -> None:
    """Agent A's tool holds its secrets in its environment while agent B's scans every
    process it can see, and the scratch and temporary folders: nothing of A's."""
    import threading

    holder = threading.Thread(
        target=lambda: sandbox.run(
            SandboxRequest(
                "def hold() -> str:\n    import time\n    time.sleep(4)\n    return 'held'\n",
                "hold",
                {},
                "call_a",
                timeout_seconds=8,
                environment={"A_TOKEN": "agent-a-only-1234"},
            )
        )
    )
    holder.start()
    eventually(_a_tool_runs, timeout=30)  # A is running
    found = value(
        run(
            sandbox,
            """
            import os
            seen = []
            for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
                try:
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        seen.append(f.read().decode("latin-1"))
                except OSError:
                    pass
            for top in ("/tmp", os.environ.get("HOME", "/work")):
                for root, _, files in os.walk(top):
                    for name in files:
                        try:
                            with open(os.path.join(root, name), "rb") as f:
                                seen.append(f.read(65536).decode("latin-1"))
                        except OSError:
                            pass
            return {"seen": seen, "env": dict(os.environ)}
            """,
        )
    )
    holder.join()
    assert "agent-a-only-1234" not in json.dumps(found)
    assert "A_TOKEN" not in found["env"]  # type: ignore[index]


def test_a_calls_secrets_are_on_no_command_line_while_it_runs(
    sandbox: SubprocessSandbox,
) -> None:
    """Every process of the host can read every other's /proc/<pid>/cmdline: the jail's
    configuration (the tool's environment, the agent's secrets) once went there. The host
    scans all command lines while the call runs (seen running: its jail's is among them)."""
    import threading

    from cairn.tools.subprocess_sandbox import JAIL

    done: list[SandboxResult] = []
    holder = threading.Thread(
        target=lambda: done.append(
            sandbox.run(
                SandboxRequest(
                    "def hold() -> str:\n    import os, time\n    time.sleep(3)\n"
                    "    return os.environ['API_TOKEN'][-4:]\n",
                    "hold",
                    {},
                    "call_a",
                    timeout_seconds=20,
                    environment={"API_TOKEN": "tok-secret-9876"},
                )
            )
        )
    )
    holder.start()
    lines: list[str] = []
    deadline = time.monotonic() + 30
    while not any(JAIL in line for line in lines) and time.monotonic() < deadline:
        lines = []
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            with contextlib.suppress(OSError):
                lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode("latin-1"))
        time.sleep(0.01)
    holder.join()
    assert any(JAIL in line for line in lines), "the call was never seen running"
    assert not any("tok-secret-9876" in line or "API_TOKEN" in line for line in lines)
    assert done[0].success and done[0].value == "9876", done[0]


def test_no_file_of_the_host_can_be_read_or_written(
    sandbox: SubprocessSandbox, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the server's own file")
    found = value(
        run(
            sandbox,
            """
            import os
            out = {}
            for path in (secret, folder + "/planted", "/etc/passwd", "/usr/planted", "/root"):
                try:
                    with open(path, "a+") as f:
                        f.seek(0)
                        out[path] = "opened: " + f.read()
                except OSError as err:
                    out[path] = type(err).__name__
            out["root"] = sorted(os.listdir("/"))
            return out
            """,
            secret=str(secret),
            folder=str(tmp_path),
        )
    )
    assert isinstance(found, dict)
    assert not any(str(v).startswith("opened") for k, v in found.items() if k != "root"), found
    assert sorted(os.listdir(tmp_path)) == ["secret.txt"]
    assert not Path("/usr/planted").exists()
    assert set(found["root"]) <= {
        "bin",
        "dev",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "proc",
        "root",
        "sbin",
        "tmp",
        "usr",
        "work",
    }


def test_no_network_and_no_database_socket(sandbox: SubprocessSandbox, db: Database) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    # os.walk, not rglob: other processes make and remove folders in /tmp meanwhile (a
    # CDK synth's cdk.out), and a folder gone mid-scan is no reason to fail.
    sockets = [
        os.path.join(root, name)
        for top in ("/tmp", "/var/run/postgresql")
        for root, _, names in os.walk(top)
        for name in names
        if name.startswith(".s.PGSQL.")
    ]
    found = value(
        run(
            sandbox,
            """
            import socket
            out = {}
            for host, p in (("127.0.0.1", port), ("127.0.0.1", 5432), ("1.1.1.1", 443)):
                try:
                    socket.create_connection((host, p), timeout=1).close()
                    out[f"{host}:{p}"] = "connected"
                except OSError as err:
                    out[f"{host}:{p}"] = type(err).__name__
            for path in sockets:
                s = socket.socket(socket.AF_UNIX)
                try:
                    s.connect(path)
                    out[path] = "connected"
                except OSError as err:
                    out[path] = type(err).__name__
            return out
            """,
            port=port,
            sockets=sockets,
        )
    )
    assert isinstance(found, dict) and "connected" not in found.values(), found
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_nothing_a_tool_starts_outlives_it_nor_its_scratch(sandbox: SubprocessSandbox) -> None:
    marker = f"cairn-stray-{uuid.uuid4().hex}"
    done = run(
        sandbox,
        """
        import os, subprocess
        open("/tmp/left-behind", "w").write("state")
        # A daemon: double fork and a new session, out of the tool's process group.
        subprocess.Popen(["sh", "-c", f"sleep 60; echo {marker}"], start_new_session=True)
        return "started"
        """,
        marker=marker,
    )
    assert done.success
    eventually(lambda: marker not in _host_commands(), timeout=10)  # the kill lands
    again = value(run(sandbox, "import os\nreturn os.path.exists('/tmp/left-behind')"))
    assert again is False  # a fresh scratch for every call


def test_the_whole_tree_is_killed_at_the_time_limit(sandbox: SubprocessSandbox) -> None:
    marker = f"cairn-stray-{uuid.uuid4().hex}"
    started = time.monotonic()
    done = run(
        sandbox,
        """
        import subprocess, time
        subprocess.Popen(["sh", "-c", f"sleep 60; echo {marker}"], start_new_session=True)
        time.sleep(60)
        """,
        timeout=1,
        marker=marker,
    )
    assert not done.success and "longer than 1 s" in done.value
    assert time.monotonic() - started < 5
    eventually(lambda: marker not in _host_commands(), timeout=10)  # the kill lands


def test_a_fork_bomb_is_contained(sandbox: SubprocessSandbox) -> None:
    started = time.monotonic()
    done = run(
        sandbox,
        """
        import os
        children = 0
        while True:
            try:
                if os.fork() == 0:
                    while True:
                        pass
                children += 1
            except OSError:
                return children
        """,
        timeout=3,
    )
    assert time.monotonic() - started < 8
    if done.success:  # stopped by the process limit, not the clock
        assert isinstance(value(done), int) and value(done) < 64
    assert run(sandbox, "return 'still serving'").value == "still serving"


def test_filling_the_disk_stops_at_the_scratch_limit(sandbox: SubprocessSandbox) -> None:
    done = run(
        sandbox,
        """
        block = b"x" * (1 << 20)
        written = 0
        try:
            with open("/tmp/fill", "wb") as f:
                while written < 1024:
                    f.write(block)
                    written += 1
        except OSError as err:
            return [written, type(err).__name__]
        return [written, None]
        """,
    )
    written, error = value(done)  # type: ignore[misc]
    assert written <= 64 and error is not None


def test_a_flood_of_output_is_bounded(sandbox: SubprocessSandbox) -> None:
    done = run(sandbox, "import os\nwhile True:\n    os.write(1, b'y' * 65536)", timeout=3)
    assert not done.success
    assert len(done.value) < 1000 and sum(map(len, done.stderr)) <= 50_000


def test_nothing_of_a_call_is_left_in_a_warm_lambda_environment() -> None:
    """The sandbox function's sweep, run where it is safe: in a PID namespace of its own."""
    marker = f"cairn-stray-{uuid.uuid4().hex}"
    # Everything runs in a PID namespace of its own: a sweep that went wrong there could
    # not touch the host's processes.
    script = textwrap.dedent(
        f"""
        import os, subprocess, time, sys
        sys.path[:0] = {sys.path!r}
        from cairn.tools.runner import leave_nothing_behind
        subprocess.Popen(["sh", "-c", "sleep 60; echo {marker}"], start_new_session=True)
        time.sleep(0.2)
        import tempfile
        scratch = tempfile.mkdtemp()
        os.makedirs(scratch + "/left/deep")
        open(scratch + "/left/deep/state", "w").write("a previous call's")
        untouched = leave_nothing_behind(scratch)  # outside Lambda's runtime: nothing at all
        assert os.listdir(scratch) == ["left"]
        os.environ["AWS_LAMBDA_RUNTIME_API"] = "127.0.0.1:9001"
        killed = leave_nothing_behind(scratch)
        assert os.listdir(scratch) == []
        os.rmdir(scratch)
        time.sleep(0.2)
        alive = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()
                 and b"{marker}" in open(f"/proc/{{p}}/cmdline", "rb").read()]
        print(untouched, killed, len(alive))
        """
    )
    unshare = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
    if os.geteuid() != 0:
        unshare[1:1] = ["--user", "--map-root-user"]
    done = subprocess.run(
        [*unshare, sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"]},
    )
    untouched, killed, alive = done.stdout.split()
    assert (untouched, alive) == ("0", "0") and int(killed) >= 1, done.stderr


def _a_tool_runs() -> bool:
    """Whether a sandbox's interpreter (`python -I -S`, started by this test's process or a
    child of it) is running: the tool's environment is set as it reads its request."""
    parents: dict[int, int] = {}
    commands: dict[int, list[bytes]] = {}
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
            commands[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    mine = {os.getpid()}
    for _ in range(4):  # unshare, its fork, the jail: a few generations down
        mine |= {pid for pid, parent in parents.items() if parent in mine}
    return any(pid != os.getpid() and b"-S" in commands.get(pid, [])[:4] for pid in mine)


def _host_commands() -> str:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode("latin-1"))
    return "\n".join(found)


@pytest.mark.parametrize("isolation", ["namespaces", "process"])
def test_a_tool_imports_the_standard_library_and_none_of_the_servers_packages(
    isolation: str,
) -> None:
    box = SubprocessSandbox(memory_bytes=256 * 1024 * 1024, isolation=isolation)  # type: ignore[arg-type]
    found = value(
        run(
            box,
            """
            import importlib, json, sqlite3, sys
            out = {}
            for name in ("cairn", "boto3", "psycopg", "pydantic", "openai"):
                try:
                    importlib.import_module(name)
                    out[name] = "imported"
                except ImportError as err:
                    out[name] = type(err).__name__
            out["path"] = sys.path
            return out
            """,
        )
    )
    assert isinstance(found, dict)
    assert {k: v for k, v in found.items() if k != "path"} == dict.fromkeys(
        ("cairn", "boto3", "psycopg", "pydantic", "openai"), "ModuleNotFoundError"
    ), found["path"]
    assert not any("site-packages" in p for p in found["path"]), found["path"]
