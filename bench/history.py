"""What an agent's history costs (docs/history.md): N messages to one agent through the local
HTTP bridge, the fake LLM answering at once (every 10th turn edits a block first, every 50th
archives a passage; the agent's 16k-token window is compacted as it fills, as a real one is).
Prints the bytes the history tables gained per step, their size after N steps, and how long
the history's reads take at the end (the timeline's first page, the state at the newest and
at the oldest version, a diff across the whole history). Round trips per step are held by
tests/integration/test_step_worker.py (the history adds none).

    .venv/bin/python bench/history.py [-n 2000]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "layers" / "runtime" / "python"))

from tests.api.conftest import make_stack  # noqa: E402
from tests.fakes.llm_server import Recorded, Reply, call  # noqa: E402

from cairn.local.postgres import start_embedded  # noqa: E402
from cairn.store import Database  # noqa: E402
from cairn.store.migrate import apply_migrations  # noqa: E402

LLM = {"model": "gpt-bench", "model_endpoint_type": "openai", "context_window": 16_000}
EMBEDDING = {
    "embedding_model": "cairn-hash",
    "embedding_endpoint_type": "hash",
    "embedding_dim": 384,
}
SIZES = """
SELECT (SELECT coalesce(sum(pg_column_size(v.*)), 0) FROM agent_versions v) AS versions,
       (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM context_changes c) AS changes,
       (SELECT count(*) FROM agent_versions) AS version_rows,
       (SELECT count(*) FROM context_changes) AS change_rows,
       (SELECT coalesce(sum(pg_column_size(m.*)), 0) FROM messages m) AS messages,
       (SELECT count(*) FROM steps) AS steps
"""


def answer(request: Recorded) -> Reply:
    """A turn's answer by its message number: an edit first every 10th, an archived passage
    every 50th; a summary for a compaction; plain words after a tool's return."""
    last = request.body["messages"][-1]
    if last["role"] == "tool" or "memory_insert" not in request.tool_names:
        return Reply(text="ok")  # after a tool, or a compaction's summary
    text = request.last_text()
    n = int(text.rsplit(" ", 1)[-1]) if text.startswith("message ") else 1
    if n % 50 == 0:
        return Reply(tool_calls=[call("archival_memory_insert", content=f"Note {n}")])
    if n % 10 == 0:
        return Reply(tool_calls=[call("memory_insert", label="human", new_str=f"Fact {n}")])
    return Reply(text=f"ok {n}")


def timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=2000, help="messages (each one or two steps)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dsn, server = start_embedded(Path(tmp) / "pgdata", cleanup="delete")
        apply_migrations(dsn)
        db = Database(dsn, max_size=4)
        with make_stack(db) as stack:
            client = stack.client()
            agent = client.agents.create(
                name="bench",
                memory_blocks=[{"label": "human", "value": "Name: Ada"}],
                llm_config=LLM,
                embedding_config=EMBEDDING,
                tools=["archival_memory_insert"],
            )  # type: ignore[arg-type]
            stack.fake.when(lambda _: True, answer)
            started = time.perf_counter()
            for i in range(args.n):
                client.agents.messages.create(
                    agent.id, messages=[{"role": "user", "content": f"message {i}"}]
                )
            took = time.perf_counter() - started
            with db.connection() as conn:
                sizes = conn.execute(SIZES).fetchone()
            assert sizes is not None
            headers = {"Authorization": f"Bearer {stack.key}"}
            with httpx.Client(base_url=f"{stack.url}/v1", headers=headers, timeout=120) as http:
                base = f"/agents/{agent.id}/history"
                page = http.get(base, params={"limit": 50}).json()
                newest = page[0]["version"]
                reads = {
                    "timeline page (50)": [timed(lambda: http.get(base, params={"limit": 50}))],
                    "state at newest": [timed(lambda: http.get(f"{base}/{newest}"))],
                    "state at oldest": [timed(lambda: http.get(f"{base}/2"))],
                    "diff oldest..newest": [
                        timed(lambda: http.get(f"{base}/{newest}/diff", params={"against": 2}))
                    ],
                }
                for name in list(reads):  # five more of each, the first was warm-up
                    fn = {
                        "timeline page (50)": lambda: http.get(base, params={"limit": 50}),
                        "state at newest": lambda: http.get(f"{base}/{newest}"),
                        "state at oldest": lambda: http.get(f"{base}/2"),
                        "diff oldest..newest": lambda: http.get(
                            f"{base}/{newest}/diff", params={"against": 2}
                        ),
                    }[name]
                    reads[name] = [timed(fn) for _ in range(5)]
        db.close()
        del server
    steps = sizes["steps"]
    print(f"messages {args.n}, steps {steps}, {took:.0f} s, load {os.getloadavg()[0]:.2f}")
    print(
        f"agent_versions: {sizes['version_rows']} rows, {sizes['versions'] / 1024:.0f} KiB,"
        f" {sizes['versions'] / steps:.0f} B/step"
    )
    print(
        f"context_changes: {sizes['change_rows']} rows, {sizes['changes'] / 1024:.0f} KiB,"
        f" {sizes['changes'] / steps:.0f} B/step"
    )
    print(f"messages (for scale): {sizes['messages'] / steps:.0f} B/step")
    for name, times in reads.items():
        print(f"{name}: median {statistics.median(times):.1f} ms")


if __name__ == "__main__":
    main()
