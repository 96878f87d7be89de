"""A real stdio MCP server for the tests, made with the official `mcp` SDK, run as a program
(`python stdio_mcp_server.py [mode]`) as an organization's stdio server would be: in the
tool jail, on its stdin and stdout.

Its tools tell the test what the program could see and reach: its environment, a file, a
network address, another process. A mode makes it misbehave before it serves:
`garbage` writes non-protocol lines to stdout, `hang` never answers, `exit` dies at once,
`flood` writes lines without end to stdout, `endless-line` one line without end."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from mcp.server.mcpserver import MCPServer

mode = sys.argv[1] if len(sys.argv) > 1 else "serve"
if mode == "garbage":
    print("this is not JSON-RPC", flush=True)
    print("{not even json", flush=True)
elif mode == "hang":
    time.sleep(3600)
elif mode == "exit":
    sys.exit(3)
elif mode == "flood":
    line = "x" * 65535 + "\n"
    while True:
        sys.stdout.write(line)
elif mode == "endless-line":
    while True:
        sys.stdout.write("x" * 65536)

server = MCPServer("cairn-stdio-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def env(name: str) -> str:
    """The value of one of this program's environment variables, or `<unset>`."""
    return os.environ.get(name, "<unset>")


@server.tool()
def read(path: str) -> str:
    """A file's first 200 characters, or why it could not be read."""
    try:
        with open(path) as f:
            return f.read(200)
    except OSError as err:
        return f"refused: {type(err).__name__}: {err}"


@server.tool()
def connect(host: str, port: int) -> str:
    """Whether a TCP connection to host:port could be made."""
    try:
        socket.create_connection((host, port), timeout=2).close()
        return "connected"
    except OSError as err:
        return f"refused: {type(err).__name__}: {err}"


@server.tool()
def processes() -> str:
    """The process ids this program can see."""
    return " ".join(sorted(p for p in os.listdir("/proc") if p.isdigit()))


@server.tool()
def spawn(count: int) -> str:
    """How many child processes it could start (each sleeping) before being refused."""
    started = []
    try:
        for _ in range(count):
            started.append(subprocess.Popen(["sleep", "30"]))
    except OSError as err:
        return f"{len(started)} then refused: {type(err).__name__}"
    return f"{len(started)}"


@server.tool()
def probe(names: list[str], paths: list[str], host: str, port: int) -> dict[str, object]:
    """All of the above at once: the variables, the files, the address, the processes."""
    return {
        "env": {name: env(name) for name in names},
        "files": {path: read(path) for path in paths},
        "connect": connect(host, port),
        "processes": processes(),
    }


@server.tool()
def die() -> str:
    """Ends this program in the middle of the call."""
    os._exit(5)


if __name__ == "__main__":
    server.run("stdio")
