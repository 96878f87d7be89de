"""The local sandbox: a fresh interpreter per call, in namespaces of its own."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cairn.tools.jail import CONFIG_VARIABLE
from cairn.tools.runner import MARK, RUNNER
from cairn.tools.sandbox import (
    DEFAULT_MEMORY_BYTES,
    OUTPUT_CHARS,
    PROCESSES,
    SCRATCH_BYTES,
    Confined,
    Isolation,
    Network,
    SandboxRefused,
    SandboxRequest,
    SandboxResult,
    ServerLaunch,
)

JAIL = str(Path(__file__).with_name("jail.py"))
# A stdio MCP server's output, bounded in the jail: the SDK's reader holds a line whole
# before parsing it, so one endless line would grow in our memory. A protocol message (a
# tool's answer, a listing) is far smaller; a use (one listing or call) writes a few.
STDIO_LINE_BYTES = 16 * 1024 * 1024
STDIO_STDOUT_BYTES = 128 * 1024 * 1024


class SubprocessSandbox:
    """A fresh interpreter per call, with nothing of ours inherited.

    `namespaces` (the default): the call gets its own mount, PID, network, IPC and UTS
    namespaces (`unshare`, from util-linux) and a root file system holding only the
    interpreter and /usr read-only, a private /proc and an empty, size-limited /tmp
    (`tools/jail.py`); it runs as nobody (or, for a server that is not root, as the
    server's user mapped into a user namespace with every capability dropped), with no
    network, limits on CPU, memory, file size and processes, and everything it started
    dies with it. Where namespaces cannot be made, calls fail rather than run unconfined.

    `process`: a plain child process with an empty environment, its own session and
    scratch folder, and the same limits; for a host that is itself the isolation (a
    Lambda sandbox function, `functions/sandbox`), or a developer who opts out.
    """

    def __init__(
        self,
        *,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
        python: str = sys.executable,
        isolation: Isolation = "namespaces",
        scratch_bytes: int = SCRATCH_BYTES,
        processes: int = PROCESSES,
        user_namespace: bool | None = None,
        egress_private_networks: tuple[str, ...] = (),
        stdio_paths: tuple[str, ...] = (),
        stdio_environment: dict[str, str] | None = None,
    ) -> None:
        self.memory_bytes, self.isolation = memory_bytes, isolation
        self.scratch_bytes, self.processes = scratch_bytes, processes
        # The interpreter itself, not a virtual environment's link to it: the jail binds
        # its installation read-only, and the venv's packages (ours among them) stay out.
        self.python = os.path.realpath(python)
        self._unavailable: str | None = None
        # Root makes the namespaces itself and hands the tool to nobody; anyone else needs
        # a user namespace too (None: decide by who we are).
        self.user_namespace = os.geteuid() != 0 if user_namespace is None else user_namespace
        # The egress proxy, started on the first call that may use the network.
        self.egress_private_networks = egress_private_networks
        self._egress: tuple[str, bytes] | None = None
        self._egress_lock = threading.Lock()
        # Host folders a stdio MCP server sees read-only besides the system's and the
        # interpreter's (where its programs and packages are): the operator's choice.
        self.stdio_paths = tuple(os.path.realpath(p) for p in stdio_paths)
        # Variables every stdio server gets under its own (the sandbox function's: its
        # layers' packages on PYTHONPATH, so a server made with the `mcp` SDK starts).
        self.stdio_environment = dict(stdio_environment or {})

    def run(self, request: SandboxRequest) -> SandboxResult:
        if self.isolation == "namespaces" and (why := self.unavailable()):
            return SandboxResult(False, why)
        timeout = request.timeout_seconds
        env = {
            # The agent's secrets first: the sandbox's own variables below are not theirs
            # to change.
            **request.environment,
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": "/work",
            "TMPDIR": "/tmp",
            "CAIRN_TOOL_CALL_ID": request.tool_call_id,
        }
        if request.proxy_url:
            from cairn.tools import egress

            env.update(egress.tool_environment(request.proxy_url))
            outlet = None
        else:
            outlet = self._outlet(request.network, request.pass_seconds(), env)
        with tempfile.TemporaryDirectory(prefix="cairn-tool-") as scratch:
            first = b""  # what the command reads on stdin before the request
            if self.isolation == "namespaces":
                prefix, config = self._jailed(scratch, env, timeout, outlet)
                command = [*prefix, RUNNER]
                first = json.dumps(config).encode() + b"\n"
                child_env = {"PATH": "/usr/bin:/bin"}
            else:
                limits = f"{int(timeout) + 1},{self.memory_bytes},{self.scratch_bytes}"
                child_env = {
                    **env,
                    "HOME": scratch,
                    "TMPDIR": scratch,
                    "CAIRN_SANDBOX_LIMITS": limits,
                }
                # -S: no site, so the tool sees the standard library and none of the server's
                # packages (the venv's or the interpreter's own site-packages).
                command = [self.python, "-I", "-S", "-c", RUNNER]
            return self._call(command, child_env, scratch, request, timeout, first)

    @contextmanager
    def confined(self, launch: ServerLaunch) -> Iterator[Confined]:
        """A stdio MCP server's command, for one use: `jail.py --exec`, in the jail as a tool
        call is, with its own folders (`stdio_paths`) shown read-only too; or, under
        `process` isolation, without namespaces (the host is the boundary), as a child with
        only its own environment, the limits and the bounded stdout."""
        if self.isolation == "namespaces" and (why := self.unavailable()):
            raise SandboxRefused(why)
        env = {
            "PATH": f"{os.path.dirname(self.python)}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": "/work",
            "TMPDIR": "/tmp",
            **self.stdio_environment,
            **launch.environment,
        }
        if launch.proxy_url:  # the caller's pass (the sandbox function's: see lambda_sandbox)
            from cairn.tools import egress

            env.update(egress.tool_environment(launch.proxy_url))
            outlet = None
        else:
            outlet = self._outlet(launch.network, launch.pass_seconds(), env)
        with tempfile.TemporaryDirectory(prefix="cairn-mcp-") as scratch:
            if self.isolation == "namespaces":
                prefix, config = self._jailed(
                    scratch, env, launch.timeout_seconds, outlet, self.stdio_paths
                )
            else:
                prefix = [self.python, "-I", "-S", JAIL]
                config = {
                    "contained": False,
                    "workdir": scratch,
                    "env": {**env, "HOME": scratch, "TMPDIR": scratch},
                    "cpu_seconds": int(launch.timeout_seconds) + 1,
                    "memory_bytes": self.memory_bytes,
                    "scratch_bytes": self.scratch_bytes,
                }
            config.update(line_bytes=STDIO_LINE_BYTES, stdout_bytes=STDIO_STDOUT_BYTES)
            yield Confined(
                [*prefix, "--exec", *launch.argv],
                {"PATH": "/usr/bin:/bin", CONFIG_VARIABLE: json.dumps(config)},
            )

    def _outlet(
        self, network: Network | None, seconds: float, env: dict[str, str]
    ) -> dict[str, Any] | None:
        """The jail's way to the egress proxy when its organization allows some hosts (the
        proxy's address added to `env`), else None: no network at all."""
        if not (network and network.hosts and self.isolation == "namespaces"):
            return None
        from cairn.tools import egress  # loaded with the first call that may use the network

        path, key = self.egress()
        token = egress.issue(key, network.organization_id, network.hosts, seconds)
        env.update(egress.tool_environment(egress.proxy_url(token)))
        return {"socket": path, "jail_socket": egress.JAIL_SOCKET, "port": egress.JAIL_PORT}

    def egress(self) -> tuple[str, bytes]:
        """The local egress proxy's socket and the key its passes are signed with."""
        from cairn.tools import egress

        with self._egress_lock:
            if self._egress is None:
                folder = tempfile.mkdtemp(prefix="cairn-egress-")
                atexit.register(shutil.rmtree, folder, ignore_errors=True)
                path = os.path.join(folder, "proxy.sock")
                key = os.urandom(32)
                server = egress.serve(path, key, private_networks=self.egress_private_networks)
                threading.Thread(target=server.serve_forever, name="egress", daemon=True).start()
                self._egress = (path, key)
            return self._egress

    def _jailed(
        self,
        scratch: str,
        env: dict[str, str],
        timeout: float,
        outlet: dict[str, Any] | None,
        shown: tuple[str, ...] = (),
    ) -> tuple[list[str], dict[str, Any]]:
        """The jail's command and its configuration, which goes on its stdin or in its
        environment (the tool's holds the agent's secrets: never on a command line)."""
        root = os.path.join(scratch, "root")
        os.mkdir(root)
        config = {
            "egress": outlet,
            "root": root,
            "read_only": [
                *read_only_paths(sys.base_prefix, os.path.dirname(self.python)),
                *shown,
            ],
            "env": env,
            "cpu_seconds": int(timeout) + 1,
            "memory_bytes": self.memory_bytes,
            "scratch_bytes": self.scratch_bytes,
            "processes": self.processes,
        }
        command = [
            *_unshare(self.user_namespace),
            "--",
            self.python,
            "-I",
            "-S",  # the runner runs in this interpreter: no site-packages for the tool
            JAIL,
        ]
        return command, config

    def _call(
        self,
        command: list[str],
        env: dict[str, str],
        scratch: str,
        request: SandboxRequest,
        timeout: float,
        first: bytes = b"",
    ) -> SandboxResult:
        # Output goes to files, not pipes: the file size limit bounds what a tool can make
        # us hold, and nothing blocks on a full pipe.
        with (
            open(os.path.join(scratch, "out"), "w+b") as out,
            open(os.path.join(scratch, "err"), "w+b") as err,
        ):
            child = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                env=env,
                cwd=scratch,
                start_new_session=True,
            )
            timed_out = False
            try:
                child.communicate(first + json.dumps(request.payload()).encode(), timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                # The whole session goes, finished or not: nothing the tool started lingers
                # (in a PID namespace, killing its first process ends all of them).
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
            if timed_out:
                return SandboxResult(False, f"TimeoutError: the tool ran longer than {timeout:g} s")
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode("utf-8", "replace")
            stderr = err.read(OUTPUT_CHARS * 4).decode("utf-8", "replace")
        _, mark, tail = stdout.rpartition(MARK + "\n")
        if not mark:
            reason = stderr.strip().splitlines()[-1:] or [f"exit status {child.returncode}"]
            return SandboxResult(
                False,
                f"the tool's process died: {reason[0]}",
                stderr=[stderr[-OUTPUT_CHARS:]] if stderr else [],
            )
        try:
            return SandboxResult.from_runner(json.loads(tail))
        except ValueError:
            return SandboxResult(False, "the tool's process died: its result was cut short")

    def unavailable(self) -> str | None:
        """Why namespaces cannot be made here (None if they can); probed once."""
        if self._unavailable is None:
            try:
                done = subprocess.run(
                    [*_unshare(self.user_namespace), "--", "true"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                )
                self._unavailable = "" if done.returncode == 0 else done.stderr.strip()
            except (OSError, subprocess.TimeoutExpired) as err:
                self._unavailable = str(err)
            if self._unavailable:
                self._unavailable = (
                    "the tool sandbox cannot isolate tools on this host "
                    f"({self._unavailable}); set CAIRN_SANDBOX_ISOLATION=process to run "
                    "them as plain child processes (not for code you do not trust)"
                )
        return self._unavailable or None


SYSTEM_PATHS = ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/libx32", "/sbin")


def read_only_paths(prefix: str, home: str) -> list[str]:
    """What the jail binds read-only: the system's programs and libraries, plus the
    interpreter's installation and folder where they lie outside them (pyenv under /root,
    Lambda's /var/lang); one under /usr (Debian's, /usr/local) is already there."""
    paths = list(SYSTEM_PATHS)
    for extra in (os.path.realpath(prefix), home):
        if not any(extra == p or extra.startswith(p + "/") for p in paths):
            paths.append(extra)
    return paths


def _unshare(user_namespace: bool) -> list[str]:
    command = ["unshare", "--mount", "--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts"]
    if user_namespace:
        command += ["--user", "--map-root-user"]
    return command
