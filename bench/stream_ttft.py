"""Time to first token and to first event of a streamed message, through the whole local
stack (`python -m cairn.local`, what `make dev` runs) over HTTP, against a fake model that
streams at a fixed pace: its first byte after `--model-delay`, then a piece of four
characters every `--piece-delay`.

Each round asks the model directly first (the OpenAI SDK streaming from the fake: the
model's own time to first token) and sends a message with `stream_tokens: true`; then asks
the model unstreamed (as a step does without tokens: its time to the whole answer) and
sends a message without tokens (step streaming). Cairn's SSE is read as a client does.
Prints p50/p99 of each and Cairn's overhead over the model's own first token (per round,
the difference), with the machine's load average.

    .venv/bin/python bench/stream_ttft.py [-n 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import openai

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from tests.fakes.llm_server import FakeLLM, Reply  # noqa: E402

from local_stack import EMBEDDING, LLM, free_port, start_stack, stop_stack  # noqa: E402

TEXT = "Steeping now; the tea will be ready in three minutes."


def pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def model_first_token(client: openai.OpenAI) -> float:
    started = time.perf_counter()
    stream = client.chat.completions.create(
        model="gpt-bench", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with stream:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter() - started
                for _ in stream:
                    pass
                return first * 1000
    raise AssertionError("the model sent no text")


def cairn_first(c: httpx.Client, agent: str, tokens: bool) -> tuple[float, float, float]:
    """(first event, first assistant text, end) in ms after the request left."""
    started = time.perf_counter()
    first_event = first_text = 0.0
    body = {"input": "tea?", "stream_tokens": tokens}
    with c.stream("POST", f"/v1/agents/{agent}/messages/stream", json=body) as answer:
        assert answer.status_code == 200, answer.read()
        for line in answer.iter_lines():
            now = (time.perf_counter() - started) * 1000
            if line.startswith("data: {"):
                first_event = first_event or now
                if '"assistant_message"' in line:
                    first_text = first_text or now
    return first_event, first_text, (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=100, help="rounds")
    parser.add_argument("--model-delay", type=float, default=0.05, help="seconds to first byte")
    parser.add_argument("--piece-delay", type=float, default=0.02, help="seconds between pieces")
    args = parser.parse_args()
    port = free_port()
    keys = ("model", "tokens", "overhead", "event", "event_over_model_end", "model_end")
    rows: dict[str, list[float]] = {k: [] for k in keys}
    with (
        tempfile.TemporaryDirectory() as data,
        FakeLLM() as fake,
        open(Path(data) / "stack.log", "w") as log,
    ):
        reply = Reply(text=TEXT, usage=(1, 1), delay=args.model_delay, chunk_delay=args.piece_delay)
        fake.when(lambda r: True, reply)
        stack = start_stack(data, port, fake, log)
        model = openai.OpenAI(api_key="k", base_url=f"{fake.base_url}/v1", max_retries=0)
        try:
            headers = {"Authorization": "Bearer sk-cairn-bench"}
            with httpx.Client(
                base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60
            ) as c:
                agent = c.post(
                    "/v1/agents/", json={"llm_config": LLM, "embedding_config": EMBEDDING}
                ).json()["id"]
                for _ in range(5):  # warm up
                    cairn_first(c, agent, True)
                for _ in range(args.n):
                    own = model_first_token(model)
                    _, text, _ = cairn_first(c, agent, True)
                    rows["model"].append(own)
                    rows["tokens"].append(text)
                    rows["overhead"].append(text - own)
                    started = time.perf_counter()  # the model's whole answer, unstreamed,
                    model.chat.completions.create(  # as a step asks it without tokens
                        model="gpt-bench", messages=[{"role": "user", "content": "hi"}]
                    )
                    whole = (time.perf_counter() - started) * 1000
                    event, _, _ = cairn_first(c, agent, False)
                    rows["model_end"].append(whole)
                    rows["event"].append(event)
                    rows["event_over_model_end"].append(event - whole)
        finally:
            stop_stack(stack)
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(
        f"make dev's processes, {args.n} rounds; model: first byte after "
        f"{args.model_delay * 1000:.0f} ms, a piece every {args.piece_delay * 1000:.0f} ms "
        f"(load {load})"
    )
    labels = {
        "model": "model's own first token (SDK direct)",
        "tokens": "Cairn first token (stream_tokens)",
        "overhead": "  overhead over the model's first token",
        "model_end": "model's whole answer, unstreamed (SDK direct)",
        "event": "Cairn first event (step streaming)",
        "event_over_model_end": "  overhead over the model's whole answer",
    }
    for key, label in labels.items():
        values = rows[key]
        print(
            f"{label:42s} p50 {statistics.median(values):6.1f} ms   p99 {pct(values, 0.99):6.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
