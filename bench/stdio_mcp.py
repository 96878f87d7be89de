"""What a stdio MCP server costs in the tool jail, started for each use (issue 67).

Times, over N uses each: the jail alone (a program that exits at once), the interpreter in
it (`python -c pass`), the interpreter importing the `mcp` SDK's server, and a whole use of
the test server (tests/fakes/stdio_mcp_server.py): started, initialized, its tools listed
or one called, stopped. Prints p50/p99 and the machine's load.

    .venv/bin/python bench/stdio_mcp.py [--uses 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cairn.mcp_servers.client import McpTarget, call_tool, list_tools  # noqa: E402
from cairn.tools.sandbox import Network, ServerLaunch  # noqa: E402
from cairn.tools.subprocess_sandbox import SubprocessSandbox  # noqa: E402

FAKES = ROOT / "tests" / "fakes"
SERVER = str(FAKES / "stdio_mcp_server.py")


def launch(*argv: str) -> ServerLaunch:
    return ServerLaunch(argv, {}, Network("org-bench"), 30)


def timed(n: int, once: Callable[[], object]) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        once()
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uses", type=int, default=20)
    n = parser.parse_args().uses
    box = SubprocessSandbox(stdio_paths=(sys.prefix, str(FAKES)))
    assert box.unavailable() is None, box.unavailable()

    def program(*argv: str) -> Callable[[], object]:
        def once() -> object:
            with box.confined(launch(*argv)) as confined:
                return subprocess.run(
                    confined.command, env=confined.environment, check=True, capture_output=True
                )

        return once

    def use(work: Callable[[McpTarget], object]) -> Callable[[], object]:
        def once() -> object:
            with box.confined(launch(sys.executable, SERVER)) as confined:
                return work(McpTarget("bench", "stdio", process=confined))

        return once

    rows = {
        "the jail alone (/bin/true)": program("/bin/true"),
        "python -c pass in the jail": program(sys.executable, "-c", "pass"),
        "python importing the mcp server SDK": program(
            sys.executable, "-c", "import mcp.server.mcpserver"
        ),
        "a use: start, list its tools, stop": use(lambda t: list_tools(t, (), 30)),
        "a use: start, call a tool, stop": use(
            lambda t: call_tool(t, "add", {"a": 1, "b": 2}, (), 30)
        ),
    }
    print(f"{n} uses each, load {os.getloadavg()[0]:.2f} (1 min)\n")
    print("| measure | p50 ms | p99 ms |\n| --- | --- | --- |")
    for name, once in rows.items():
        once()  # the page cache warm, as on a running server
        times = timed(n, once)
        p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
        print(f"| {name} | {statistics.median(times):.0f} | {p99:.0f} |")
    print(f"\nload {os.getloadavg()[0]:.2f} after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
