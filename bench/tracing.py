"""What tracing costs a step: the spans Cairn opens (request, run, step, model call, tools,
checkpoint: about six a one-step turn), timed with tracing off (no OTEL_* variables: the
default) and on (the SDK's batch processor, exporting to a collector that answers at once,
over loopback), interleaved in one process; and whether the SDK is loaded when off.

    .venv/bin/python bench/tracing.py [-n 20000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "runtime" / "python"))

from cairn import tracing  # noqa: E402

SPANS_A_STEP = 6


class Collector(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def a_step() -> None:
    with tracing.span("step", attributes={"cairn.run_id": "run-x", "cairn.step_index": 0}):
        with tracing.span("chat gpt-4o", kind=tracing.CLIENT) as model:
            model.set_attributes({"gen_ai.usage.input_tokens": 1200})
        for name in ("memory_insert", "conversation_search"):
            with tracing.span(f"execute_tool {name}"):
                pass
        with tracing.span("checkpoint", kind=tracing.CLIENT):
            tracing.traceparent()


def timed(rounds: int) -> list[float]:
    out = []
    for n in range(rounds):
        if n % 200 == 0:  # real steps are tens of ms apart: the export queue never fills
            tracing.flush()
        start = time.perf_counter_ns()
        a_step()
        out.append((time.perf_counter_ns() - start) / 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=20000)
    args = parser.parse_args()
    for k in [k for k in os.environ if k.startswith("OTEL_")]:
        del os.environ[k]
    assert not tracing.configure()
    loaded_off = any(m.startswith("opentelemetry.sdk") for m in sys.modules)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    Thread(target=server.serve_forever, daemon=True).start()
    figures: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(5):  # interleaved rounds
        tracing.shutdown()
        figures["off"] += timed(args.n // 5)
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{server.server_port}"
        assert tracing.configure()
        figures["on"] += timed(args.n // 5)
        tracing.flush()
        del os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
    tracing.shutdown()
    load = os.getloadavg()[0]
    print(f"A step's {SPANS_A_STEP} spans, {args.n} steps each, interleaved; load {load:.1f}")
    print(f"  SDK loaded while off: {loaded_off}")
    for name, values in figures.items():
        values.sort()
        p99 = values[int(len(values) * 0.99)]
        print(f"  {name}: p50 {statistics.median(values):.1f} us a step, p99 {p99:.1f} us")


if __name__ == "__main__":
    main()
