"""The console's weight and load time: its own files (bytes as served and gzipped), and the
time headless Chromium takes to open it, cold (a new profile: nothing cached) and warm (the
same tab again), on an agent of 1,000 in-context messages, against the local stack
(`python -m cairn.local`) with the fake model.

    .venv/bin/python bench/console.py [--rounds 5]

Prints the figures with the machine's load; docs/numbers.md ("The console") keeps them.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "layers" / "runtime" / "python"))

from tests.fakes.llm_server import FakeLLM, Reply  # noqa: E402

CONSOLE = ROOT / "layers" / "runtime" / "python" / "cairn" / "console"
KEY = "sk-cairn-console-bench"


def weight() -> list[tuple[str, int, int]]:
    """Each of the console's files: bytes, and gzipped."""
    return [
        (p.name, p.stat().st_size, len(gzip.compress(p.read_bytes(), 9)))
        for p in sorted(CONSOLE.iterdir())
        if p.is_file()
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_stack(folder: Path, fake: FakeLLM) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(
        CAIRN_DATA_DIR=str(folder / "data"),
        CAIRN_PORT=str(port),
        CAIRN_API_KEY=KEY,
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=f"{fake.base_url}/v1",
        PYTHONPATH=os.pathsep.join([str(ROOT / "layers" / "runtime" / "python"), str(ROOT)]),
    )
    log = open(folder / "stack.log", "wb")  # noqa: SIM115 (kept open for the process)
    proc = subprocess.Popen([sys.executable, "-m", "cairn.local"], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/v1/health/", timeout=2).status_code == 200:
                return url, proc
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"the local stack did not start: see {folder / 'stack.log'}")


def browser(profile: Path) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or ""
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1366,768",
        "--disable-gpu",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver") or ""))


def opened(d: Any, url: str, route: str, visit: str) -> dict[str, float]:
    """Open the console at `route`; the page's load, the route drawn, bytes transferred.
    `visit` makes the address a new one, so the browser loads the page (the same address
    but for its `#...` would only move within it); the files' addresses stay the same."""
    started = time.perf_counter()
    d.get(f"{url}/console?visit={visit}{route}")
    deadline = time.monotonic() + 60
    while not d.execute_script("return document.body.dataset.page"):
        if time.monotonic() > deadline:
            raise SystemExit(f"{route} was not drawn")
        time.sleep(0.01)
    drawn = (time.perf_counter() - started) * 1000
    timing = d.execute_script(
        "const n = performance.getEntriesByType('navigation')[0];"
        "const r = performance.getEntriesByType('resource');"
        "return [n.loadEventEnd, r.filter(e => e.initiatorType !== 'fetch')"
        ".reduce((s, e) => s + e.transferSize, n.transferSize)]"
    )
    return {
        "load_ms": float(timing[0]),
        "drawn_ms": drawn,
        "render_ms": float(d.execute_script("return document.body.dataset.renderMs")),
        "bytes": float(timing[1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    files = weight()
    print("The console's files (bytes; gzipped):")
    for name, raw, packed in files:
        print(f"  {name}: {raw:,}; {packed:,}")
    total = (sum(f[1] for f in files), sum(f[2] for f in files))
    print(f"  in all: {total[0]:,}; {total[1]:,}")
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as fake:
        fake.when(lambda _: True, Reply(text="Noted."))
        url, proc = start_stack(Path(tmp), fake)
        try:
            http = httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120
            )
            body = {
                "name": "Long talk",
                "model": "openai/gpt-test",
                "context_window_limit": 1_000_000,
                "metadata": {"cairn_message_embeddings": False},
            }
            agent = http.post("/v1/agents/", json=body).json()
            said = [
                {
                    "role": "user" if n % 2 == 0 else "assistant",
                    "content": f"Message {n}: the ridge, the trail and the weather again.",
                }
                for n in range(1000)
            ]
            http.post(
                f"/v1/agents/{agent['id']}/messages/capture",
                json={"messages": said, "add_to_context": True},
            ).raise_for_status()
            figures: dict[str, list[dict[str, float]]] = {}
            for n in range(args.rounds):
                profile = Path(tmp) / f"profile-{n}"
                d = browser(profile)
                try:
                    d.get(f"{url}/console")
                    d.execute_script(
                        "sessionStorage.setItem('cairn.console.key', arguments[0])", KEY
                    )
                    for page, route in (("agent", ""), ("chat", "/chat")):
                        # Cold: nothing cached (the cache cleared first); warm: the same
                        # tab opening it again, its files asked again and answered 304.
                        d.execute_cdp_cmd("Network.clearBrowserCache", {})
                        where = f"#/agents/{agent['id']}{route}"
                        cold = opened(d, url, where, f"{n}-{page}-cold")
                        warm = opened(d, url, where, f"{n}-{page}-warm")
                        figures.setdefault(f"{page} cold", []).append(cold)
                        figures.setdefault(f"{page} warm", []).append(warm)
                finally:
                    d.quit()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
    load = os.getloadavg()
    print(
        f"\nOpening the console on an agent of 1,000 messages, {args.rounds} rounds; load "
        f"{load[0]:.1f}:"
    )
    for name, runs in figures.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"  {name}: page loaded {med['load_ms']:.0f} ms, route drawn {med['drawn_ms']:.0f} ms "
            f"(its calls and drawing {med['render_ms']:.0f} ms), {med['bytes'] / 1024:.1f} KiB "
            "transferred"
        )


if __name__ == "__main__":
    main()
