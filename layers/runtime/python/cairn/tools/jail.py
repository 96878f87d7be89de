"""The first process of a sandboxed tool call, started by `unshare` in fresh namespaces.

Run as `python -I -S jail.py <runner source>` (its configuration on stdin), or as
`jail.py --exec <program> <args...>` for a stdio MCP server (its configuration in the
environment), inside new mount, PID, network, IPC and UTS namespaces (and a user
namespace when the server is not root). It builds a
root file system of its own on a size-limited tmpfs (the interpreter's files and /usr
bound read-only, a private /proc, a few device nodes, an empty /tmp), pivots into it and
detaches the old one, so nothing of the host's files, sockets or processes can be named.
It then gives up every privilege (uid and gid nobody where that user exists in the
namespace, an empty capability bounding set, no_new_privs) and resource limits are set,
then runs the tool runner in this same process, which is PID 1 of its namespace: when it
exits or is killed, the kernel kills everything the tool started. A program (`--exec`) runs
as its child, so that PID 1 stays to relay the egress and reap.

With `"contained": false` in its config (`process` isolation: the sandbox function on AWS,
which is itself the boundary and cannot make namespaces) `--exec` makes no namespace or root
and keeps its user: the program gets its limits, an environment of its own, its scratch
folder as working directory and the same bounded stdout, nothing more.

With `egress` in its config (its organization allows some hosts), the egress proxy's Unix
socket is bound into the new root and a thread relays 127.0.0.1:3128 to it: the tool's
only way out, through the proxy's allow-list (`tools/egress.py`).

Standard library only; it never imports Cairn (the tool must not find our code loaded).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import platform
import resource
import selectors
import socket
import struct
import sys
import threading
from typing import Any

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECUREBITS = 24, 38, 28
# SECBIT_NOROOT | its lock, SECBIT_NO_SETUID_FIXUP | its lock: uid 0 gains nothing by exec.
SECUREBITS = 0x0F
NOBODY = 65534
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
DEVICES = ("null", "zero", "random", "urandom")
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
IFREQ = "16sh22x"  # struct ifreq: the name, then the flags in a 24-byte union

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    enc = [None if v is None else v.encode() for v in (source, target, fstype, data)]
    _check(_libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]), f"mount {target}")


def _bind_readonly(source: str, root: str) -> None:
    target = root + source
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(source, target, None, MS_BIND | MS_REC)
    # A remount keeps the flags the kernel locked on the source (nodev, nosuid, noexec in a
    # user namespace), so they are carried over from what the source has.
    held = os.statvfs(target).f_flag
    kept = sum(bit for bit in (MS_NOSUID, MS_NODEV, MS_NOEXEC) if held & bit)
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | kept)


def build_root(root: str, config: dict[str, object]) -> None:
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount leaks to the host
    _mount(
        "tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, f"size={config['scratch_bytes']},mode=0755"
    )
    for path in config["read_only"]:  # type: ignore[attr-defined]
        if os.path.islink(path):  # usr-merged systems link /bin, /lib... into /usr
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            os.symlink(os.readlink(path), root + path)
        elif os.path.exists(path):
            _bind_readonly(path, root)
    os.makedirs(f"{root}/dev", exist_ok=True)
    for device in DEVICES:
        _bind_device(f"/dev/{device}", f"{root}/dev/{device}")
    for scratch in ("tmp", "work"):
        os.makedirs(f"{root}/{scratch}", mode=0o1777, exist_ok=True)
        os.chmod(f"{root}/{scratch}", 0o1777)
    egress = config.get("egress")
    if isinstance(egress, dict):
        os.makedirs(f"{root}/run", exist_ok=True)
        open(root + egress["jail_socket"], "a").close()
        _mount(egress["socket"], root + egress["jail_socket"], None, MS_BIND)
    os.makedirs(f"{root}/proc", exist_ok=True)
    _mount("proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(f"{root}/.old", exist_ok=True)
    number = PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(f"no pivot_root for {platform.machine()}")
    os.chdir(root)
    _check(_libc.syscall(number, b".", b".old"), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")


def _bind_device(source: str, target: str) -> None:
    open(target, "a").close()
    _mount(source, target, None, MS_BIND)


def loopback_up() -> None:
    """A new network namespace has only `lo`, and it is down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        held = fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0))
        flags = struct.unpack(IFREQ, held)[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))


def relay_egress(listener: socket.socket, path: str) -> None:
    """Each connection to `listener` joined to a new one to the proxy's socket, both ways,
    on one thread (threads count against the process limit)."""
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    while True:
        for key, _ in selector.select():
            if key.data is None:
                client, _ = listener.accept()
                upstream = socket.socket(socket.AF_UNIX)
                try:
                    upstream.connect(path)
                except OSError:
                    client.close()
                    upstream.close()
                    continue
                for one, other in ((client, upstream), (upstream, client)):
                    one.setblocking(False)
                    selector.register(one, selectors.EVENT_READ, other)
                continue
            source, target = key.fileobj, key.data
            try:
                data = source.recv(65536)  # type: ignore[union-attr]
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                try:
                    target.setblocking(True)
                    target.sendall(data)
                    target.setblocking(False)
                    continue
                except OSError:
                    pass
            for sock in (source, target):  # either side closing ends the pair
                with contextlib.suppress(KeyError, ValueError):  # the other side ended it
                    selector.unregister(sock)
                sock.close()  # type: ignore[union-attr]


def drop_privileges() -> None:
    try:  # a root server: the tool runs as nobody
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    except OSError:  # a user namespace mapping only the server's user: keep uid, lose caps
        pass
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
            break  # EINVAL: past the last capability this kernel knows
    _libc.prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0)  # fails harmlessly once not root
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    # Clear the effective, permitted and inheritable sets (capset, header version 3).
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")


def set_limits(config: dict[str, object]) -> None:
    cpu, memory = int(config["cpu_seconds"]), int(config["memory_bytes"])  # type: ignore[call-overload]
    files = int(config["scratch_bytes"])  # type: ignore[call-overload]
    limits = [
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_FSIZE, files),
        (resource.RLIMIT_NOFILE, 256),
        (resource.RLIMIT_CORE, 0),
    ]
    # Processes are counted per user: only in the jail is the user the program's alone.
    if config.get("processes"):
        limits.append((resource.RLIMIT_NPROC, int(config["processes"])))  # type: ignore[call-overload]
    for limit, value in limits:
        resource.setrlimit(limit, (value, value))


CONFIG_VARIABLE = "JAIL_CONFIG"  # internal: the jail's, never the operator's


def main() -> None:
    # Run as `jail.py <runner source>` (a tool call) the configuration (the tool's
    # environment: the agent's secrets, an egress pass) comes on stdin, its first line,
    # before the runner's request. Run as `jail.py --exec <program> <args...>` (a stdio MCP
    # server, whose stdin is its protocol) it comes in this process's environment. Never on
    # a command line: that is readable by every process of the host in /proc/<pid>/cmdline
    # for as long as the call runs; an environment only by the server's own user and root.
    serving = sys.argv[1] == "--exec"
    if serving:
        config = json.loads(os.environ.pop(CONFIG_VARIABLE))
    else:
        config = json.loads(sys.stdin.buffer.readline())
    if config.get("contained", True):
        contain(config)
    set_limits(config)
    os.chdir(config.get("workdir", "/work"))
    os.environ.clear()
    os.environ.update(config["env"])
    if serving:
        serve(sys.argv[2:], config)
    runner = sys.argv[1]
    del sys.argv[1:]
    exec(compile(runner, "<runner>", "exec"), {"__name__": "__main__"})


def contain(config: dict[str, Any]) -> None:
    """The namespaces' own root, no privileges, and the egress relay if the call has one."""
    build_root(config["root"], config)
    egress = config.get("egress")
    if egress:
        loopback_up()
        listener = socket.create_server(("127.0.0.1", egress["port"]))
    drop_privileges()
    if egress:  # started after the privileges went: a thread keeps the capabilities it had
        relay = threading.Thread(target=relay_egress, args=(listener, egress["jail_socket"]))
        relay.daemon = True
        relay.start()


def serve(argv: list[str], config: dict[str, object]) -> None:
    """The program runs as this process's child, its stdout relayed by this one, PID 1 of
    the namespace, which also relays the egress and reaps what the program leaves behind.
    When the program ends, this process ends with its status, and the kernel ends the rest.
    A line on stdout longer than `line_bytes`, or more than `stdout_bytes` in all, ends it:
    the reader on the host holds a line whole before parsing it."""
    env = config["env"]
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:
        os.dup2(writing, 1)
        os.close(reading)
        os.close(writing)
        try:
            os.execvpe(argv[0], argv, env)  # type: ignore[arg-type]
        except OSError as err:
            os.write(2, f"cannot start {argv[0]}: {err.strerror}\n".encode())
        os._exit(127)
    os.close(writing)
    line, total = int(config["line_bytes"]), int(config["stdout_bytes"])  # type: ignore[call-overload]
    relay = threading.Thread(target=relay_stdout, args=(reading, child, line, total))
    relay.daemon = True
    relay.start()
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            relay.join(timeout=1)  # what it wrote last, passed on before the end
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def relay_stdout(reading: int, child: int, line_bytes: int, stdout_bytes: int) -> None:
    since_newline = sent = 0
    while chunk := os.read(reading, 65536):
        cut = chunk.rfind(b"\n")
        since_newline = len(chunk) - cut - 1 if cut >= 0 else since_newline + len(chunk)
        sent += len(chunk)
        if since_newline > line_bytes or sent > stdout_bytes:
            limit = (
                f"a line of over {line_bytes}"
                if since_newline > line_bytes
                else (f"over {stdout_bytes}")
            )
            os.write(2, f"stopped: {limit} bytes on stdout\n".encode())
            os.kill(child, 9)
            os._exit(1)
        view = memoryview(chunk)
        while view:
            view = view[os.write(1, view) :]


if __name__ == "__main__":
    main()
