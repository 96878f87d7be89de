"""Does an agent find what was said? Recall and archival search on a long-conversation
benchmark in LoCoMo's format (Maharana et al., ACL 2024), through the public API.

Each conversation goes to one agent of a local stack this script starts (`python -m
cairn.local`, as `make dev` runs it): its turns appended through
`POST /v1/agents/{id}/messages/capture` (the first speaker as `user`, the second as
`assistant`, each with its speaker's name and its session's date), the same turns inserted as
archival passages ("Speaker: text") through `POST /v1/agents/{id}/archival-memory`. Once the
server's own embedding jobs are done, every question of categories 1-4 is asked through
`POST /v1/agents/messages/search` (what `conversation_search` runs) and
`GET /v1/agents/{id}/archival-memory/search` (what `archival_memory_search` runs).

A question is found at k when one of its evidence turns is among the first k results.
Reported: hit@1/5/10/25, recall@k (the share of its evidence turns in the first k) and MRR,
overall and per category; search p50/p99; capture, embedding and insert times; the load.

    .venv/bin/python bench/memory.py ../shared/datasets/locomo [--modes hybrid,fts,vector]
        [--scale 10000] [--embedding local|hash]

The dataset is read from where it lies (its terms: research and evaluation, not to be
copied into this repository).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
# This folder is first on the path when run as a script, and its packaging.py would stand
# for the `packaging` library that transformers imports (--ablate embeds here).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.local_stack import free_port, start_database, start_stack, stop_stack  # noqa: E402
from tests.fakes.llm_server import FakeLLM  # noqa: E402

LLM = {"model": "gpt-bench", "model_endpoint_type": "openai", "context_window": 128_000}
EMBEDDINGS = {
    "local": {
        "embedding_model": "all-MiniLM-L6-v2",
        "embedding_endpoint_type": "hugging-face",
        "embedding_dim": 384,
    },
    "hash": {
        "embedding_model": "cairn-hash",
        "embedding_endpoint_type": "hugging-face",
        "embedding_dim": 384,
    },
}
KS = (1, 5, 10, 25)
# What each part of the ranking buys (--ablate): the same statement with one part off,
# run on the stored conversation (store/search.py's Ranking), beside the default.
ABLATIONS = {
    "default": {},
    "no neighbours": {"neighbour_words": 0.0, "neighbour_meaning": 0.0},
    "BM25 b=0.75 (the usual)": {"b": 0.75},
    "candidates 50 a half": {"candidates": 50},
    "candidates 200 a half": {"candidates": 200},
    "words only (BM25)": {"semantic": False},
    "meaning only (vectors)": {"lexical": False},
}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


# -- the dataset ---------------------------------------------------------------------------


def conversations(path: Path) -> list[tuple[str, dict[str, Any]]]:
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    out = []
    for f in files:
        data = json.loads(f.read_text())
        for n, conv in enumerate(data if isinstance(data, list) else [data]):
            # locomo10.json holds a list of {"conversation": {...}, "qa": [...]}
            body = {**conv.get("conversation", conv), "qa": conv.get("qa", [])}
            out.append((f"{f.stem}" + (f"#{n}" if isinstance(data, list) else ""), body))
    return out


def session_time(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """Every turn in order with its speaker, words (a shared photo's caption with them, as
    the other speaker saw it) and a time: its session's, a second apart."""
    out, n = [], 1
    while f"session_{n}" in conv:
        start = session_time(conv[f"session_{n}_date_time"])
        for k, t in enumerate(conv[f"session_{n}"]):
            text = t["text"]
            if t.get("blip_caption"):
                text += f" [shares a photo of {t['blip_caption']}]"
            out.append(
                {
                    "dia_id": t["dia_id"],
                    "speaker": t["speaker"],
                    "text": text,
                    "at": start + timedelta(seconds=k),
                }
            )
        n += 1
    return out


def evidence(question: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for e in question.get("evidence", []):  # some name two turns in one string
        found.update(x for x in re.split(r"[;,\s]+", e) if re.fullmatch(r"D\d+:\d+", x))
    return found


def questions(conv: dict[str, Any]) -> list[dict[str, Any]]:
    return [q for q in conv["qa"] if q.get("category") in CATEGORIES and evidence(q)]


# -- measures -----------------------------------------------------------------------------


class Tally:
    """Per category: the rank of each question's first evidence turn, and recall@k."""

    def __init__(self) -> None:
        self.first: dict[str, list[int | None]] = defaultdict(list)
        self.recall: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))

    def add(self, category: int, wanted: set[str], ranked: list[set[str]]) -> None:
        first = next((i for i, ids in enumerate(ranked, 1) if ids & wanted), None)
        for key in ("all", CATEGORIES[category]):
            self.first[key].append(first)
            for k in KS:
                seen = set().union(*ranked[:k]) if ranked[:k] else set()
                self.recall[key][k].append(len(seen & wanted) / len(wanted))

    def row(self, key: str) -> str:
        ranks = self.first[key]
        hits = [sum(1 for r in ranks if r and r <= k) / len(ranks) for k in KS]
        recall = [statistics.mean(self.recall[key][k]) for k in (5, 10)]
        mrr = sum(1 / r for r in ranks if r) / len(ranks)
        cells = [f"{h:.3f}" for h in hits] + [f"{r:.3f}" for r in recall] + [f"{mrr:.3f}"]
        return f"| {key} | {len(ranks)} | " + " | ".join(cells) + " |"


HEADER = (
    "| questions | n | hit@1 | hit@5 | hit@10 | hit@25 | recall@5 | recall@10 | MRR |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def memory_of(pid: int) -> str:
    """Resident memory now and at its peak, from /proc."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return f"RSS {fields['VmRSS'].strip()}, peak {fields['VmHWM'].strip()}"


def load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


# -- through the API --------------------------------------------------------------------------


def unembedded(dsn: str, agent: str) -> int:
    """Messages the server's embedding jobs have still to do (what a client cannot see)."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM messages WHERE agent_id = %s AND embedding IS NULL"
            " AND search_text <> ''",
            (agent,),
        ).fetchone()
    return int(row[0]) if row else 0


def ingest(
    c: httpx.Client,
    conv: dict[str, Any],
    said: list[dict[str, Any]],
    embedding: dict[str, Any],
    names: bool,
) -> tuple[str, dict[str, str], float]:
    """An agent holding the conversation as its recall memory; (agent, message id ->
    dia_id, seconds the captures took)."""
    agent = (
        c.post("/v1/agents/", json={"llm_config": LLM, "embedding_config": embedding})
        .raise_for_status()
        .json()["id"]
    )
    ids: dict[str, str] = {}
    items = []
    for t in said:
        mid = f"message-{uuid.uuid4()}"
        ids[mid] = t["dia_id"]
        role = "user" if t["speaker"] == conv["speaker_a"] else "assistant"
        items.append(
            {
                "id": mid,
                "role": role,
                "name": t["speaker"] if names else None,
                "content": t["text"],
                "created_at": t["at"].isoformat(),
            }
        )
    started = time.perf_counter()
    for i in range(0, len(items), 200):
        c.post(
            f"/v1/agents/{agent}/messages/capture", json={"messages": items[i : i + 200]}
        ).raise_for_status()
    return agent, ids, time.perf_counter() - started


def wait_embedded(dsn: str, agent: str, timeout: float = 1800) -> float:
    started = time.perf_counter()
    while unembedded(dsn, agent):
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"{agent}: messages still without embeddings")
        time.sleep(0.2)
    return time.perf_counter() - started


def settled(dsn: str, timeout: float = 600) -> tuple[float, int, int]:
    """Wait until the messages table is as autovacuum keeps it: its dead rows (each
    embedding job's update leaves one) and its rows changed since the last statistics both
    under autovacuum's own thresholds, and no vacuum of it running. Straight after 10,000
    messages the planner's statistics still describe the table before them, until
    autovacuum's next round (its naptime is a minute). (Seconds waited, dead rows and rows
    changed since the last statistics, as found at first.)"""
    started = time.perf_counter()
    first: tuple[int, int] | None = None
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT s.n_dead_tup, s.n_mod_since_analyze,"
                " s.n_dead_tup < current_setting('autovacuum_vacuum_threshold')::float8"
                "   + current_setting('autovacuum_vacuum_scale_factor')::float8"
                "     * greatest(c.reltuples, 0)"
                " AND s.n_mod_since_analyze < current_setting('autovacuum_analyze_threshold')"
                "   ::float8 + current_setting('autovacuum_analyze_scale_factor')::float8"
                "     * greatest(c.reltuples, 0)"
                " AND NOT EXISTS (SELECT FROM pg_stat_progress_vacuum v WHERE v.relid = c.oid)"
                " FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid"
                " WHERE s.relname = 'messages'"
            ).fetchone()
            assert row is not None
            dead, changed, done = row
            first = first or (dead, changed)
            if done:
                return time.perf_counter() - started, *first
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"messages: {dead} dead, {changed} changed after {timeout} s")
            time.sleep(1)


def insert_passages(
    c: httpx.Client, agent: str, said: list[dict[str, Any]], names: bool
) -> tuple[dict[str, set[str]], list[float]]:
    """Each turn as a passage; (passage text -> its turns, per-insert milliseconds).
    An identical text is stored once (Cairn's rule), so one text may stand for two turns."""
    by_text: dict[str, set[str]] = defaultdict(set)
    times = []
    for t in said:
        text = f"{t['speaker']}: {t['text']}" if names else t["text"]
        by_text[text].add(t["dia_id"])
        started = time.perf_counter()
        c.post(
            f"/v1/agents/{agent}/archival-memory",
            json={"text": text, "created_at": t["at"].isoformat()},
        ).raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    return by_text, times


def search_recall(
    c: httpx.Client, agent: str, query: str, mode: str, ids: dict[str, str]
) -> list[set[str]]:
    r = c.post(
        "/v1/agents/messages/search",
        json={"agent_id": agent, "query": query, "limit": max(KS), "search_mode": mode},
    ).raise_for_status()
    return [{ids[h["message"]["id"]]} for h in r.json() if h["message"]["id"] in ids]


def search_archival(
    c: httpx.Client, agent: str, query: str, by_text: dict[str, set[str]]
) -> list[set[str]]:
    r = c.get(
        f"/v1/agents/{agent}/archival-memory/search", params={"query": query, "top_k": max(KS)}
    ).raise_for_status()
    return [by_text.get(h["content"], set()) for h in r.json()["results"]]


def ablate(
    dsn: str,
    agent: str,
    asked: list[dict[str, Any]],
    ids: dict[str, str],
    by_text: dict[str, set[str]],
    tallies: dict[str, Tally],
    embedding: dict[str, Any],
) -> None:
    """Each variant of the ranking on this conversation, recall and archival, through the
    store's own search (the API serves only the default), the query embedded here by the
    model the agent has."""
    from cairn.config import Settings
    from cairn.domain.configs import EmbeddingConfig
    from cairn.embeddings.providers import embedder_for
    from cairn.store.db import Database
    from cairn.store.search import Ranking, hybrid_messages, search_passages

    embedder = embedder_for(EmbeddingConfig.model_validate(embedding), Settings())
    vectors = embedder.embed([q["question"] for q in asked])
    db = Database(dsn)
    try:
        with db.connection() as conn:
            row = conn.execute(
                "SELECT a.organization_id, aa.archive_id FROM agents a"
                " LEFT JOIN archives_agents aa ON aa.agent_id = a.id WHERE a.id = %s",
                (agent,),
            ).fetchone()
            assert row is not None
            org, archive = row["organization_id"], row["archive_id"]
            for label, change in ABLATIONS.items():
                ranking = Ranking(**change)  # type: ignore[arg-type]
                for q, vector in zip(asked, vectors, strict=True):
                    found = hybrid_messages(
                        conn, org, agent, q["question"], vector, limit=max(KS), ranking=ranking
                    )
                    ranked = [{ids[m.id]} for m, _ in found if m.id in ids]
                    tallies.setdefault(f"recall, {label}", Tally()).add(
                        q["category"], evidence(q), ranked
                    )
                    if archive is None:
                        continue
                    passages = search_passages(
                        conn, org, archive, q["question"], vector, limit=max(KS), ranking=ranking
                    )
                    ranked = [by_text.get(p.text, set()) for p, _ in passages]
                    tallies.setdefault(f"archival, {label}", Tally()).add(
                        q["category"], evidence(q), ranked
                    )
    finally:
        db.close()


def scale(
    c: httpx.Client,
    dsn: str,
    pool: list[dict[str, Any]],
    n: int,
    embedding: dict[str, Any],
    queries: list[str],
) -> None:
    """Search time on an agent of `n` messages (the dataset's turns again, a day later each
    round) and on an archive of as many passages: what grows with memory."""
    base = [dict(t, speaker=t["speaker"]) for t in pool]
    said = []
    for k in range(n):
        t = base[k % len(base)]
        said.append(dict(t, at=t["at"] + timedelta(days=400 * (k // len(base)), seconds=k)))
    conv = {"speaker_a": said[0]["speaker"]}
    agent, ids, capture = ingest(c, conv, said, embedding, True)
    embed = wait_embedded(dsn, agent)
    waited, dead, changed = settled(dsn)
    print(
        f"\n{n} messages: capture {capture:.1f} s ({n / capture:.0f}/s), embedding jobs "
        f"{embed:.1f} s ({n / max(embed, 1e-9):.0f}/s); then {dead} dead rows and {changed} "
        f"changed since the statistics, autovacuum's within {waited:.0f} s (load {load()})"
    )
    for mode in ("hybrid", "fts"):
        times = []
        for q in queries:
            started = time.perf_counter()
            search_recall(c, agent, q, mode, ids)
            times.append((time.perf_counter() - started) * 1000)
        print(
            f"recall search ({mode}) at {n} messages: p50 {statistics.median(times):.1f} ms, "
            f"p99 {pct(times, 0.99):.1f} ms over {len(times)} queries"
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset", type=Path, help="a LoCoMo-format .json, or a folder of them")
    parser.add_argument("--modes", default="hybrid,fts,vector", help="recall search modes")
    parser.add_argument("--embedding", choices=sorted(EMBEDDINGS), default="local")
    parser.add_argument("--no-archival", action="store_true")
    parser.add_argument("--scale", type=int, default=0, help="also time search at N messages")
    parser.add_argument("--ablate", action="store_true", help="each part of the ranking off")
    parser.add_argument(
        "--no-names", action="store_true", help="capture turns without their speakers' names"
    )
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    embedding = EMBEDDINGS[args.embedding]
    recall = {m: Tally() for m in modes}
    archival = Tally()
    ablations: dict[str, Tally] = {}
    timings: dict[str, list[float]] = defaultdict(list)
    ingest_notes = []
    port = free_port()
    with (
        tempfile.TemporaryDirectory() as data,
        FakeLLM() as fake,
        open(os.environ.get("BENCH_STACK_LOG") or Path(data) / "stack.log", "w") as log,
    ):
        dsn, database = start_database(data)
        stack = start_stack(data, dsn, port, fake, log)
        try:
            with httpx.Client(
                base_url=f"http://127.0.0.1:{port}",
                headers={"Authorization": "Bearer sk-cairn-bench"},
                timeout=600,
            ) as c:
                pool: list[dict[str, Any]] = []
                asked: list[str] = []
                for name, conv in conversations(args.dataset):
                    said = turns(conv)
                    pool += said
                    agent, ids, capture = ingest(c, conv, said, embedding, not args.no_names)
                    embed = wait_embedded(dsn, agent)
                    note = (
                        f"{name}: {len(said)} turns, capture {capture:.2f} s, "
                        f"embedding jobs {embed:.1f} s"
                    )
                    by_text: dict[str, set[str]] = {}
                    if not args.no_archival:
                        by_text, inserts = insert_passages(c, agent, said, not args.no_names)
                        timings["archival insert"] += inserts
                        note += f", passage inserts p50 {statistics.median(inserts):.0f} ms"
                    ingest_notes.append(note + f" (load {load()})")
                    print(ingest_notes[-1], flush=True)
                    if args.ablate:
                        ablate(dsn, agent, questions(conv), ids, by_text, ablations, embedding)
                    for q in questions(conv):
                        asked.append(q["question"])
                        for mode in modes:
                            started = time.perf_counter()
                            ranked = search_recall(c, agent, q["question"], mode, ids)
                            timings[f"recall {mode}"].append((time.perf_counter() - started) * 1000)
                            recall[mode].add(q["category"], evidence(q), ranked)
                        if not args.no_archival:
                            started = time.perf_counter()
                            ranked = search_archival(c, agent, q["question"], by_text)
                            timings["archival"].append((time.perf_counter() - started) * 1000)
                            archival.add(q["category"], evidence(q), ranked)
                if args.scale:
                    scale(c, dsn, pool, args.scale, embedding, asked[:200])
                print(f"the stack's process: {memory_of(stack.pid)}")
        finally:
            stop_stack(stack)
            database.cleanup()
    print(f"\n{args.dataset} with the {args.embedding} embedder (load {load()})")
    for label, tally in [
        *(("recall " + m, t) for m, t in recall.items()),
        *((("archival", archival),) if not args.no_archival else ()),
    ]:
        print(f"\n{label}\n{HEADER}")
        for key in ("all", *CATEGORIES.values()):
            if tally.first[key]:
                print(tally.row(key))
    if ablations:
        print("\n| ranking | hit@1 | hit@5 | hit@10 | hit@25 | MRR |")
        print("| --- | --- | --- | --- | --- | --- |")
        for label, tally in ablations.items():
            cells = tally.row("all").split(" | ")
            print(f"| {label} | " + " | ".join(cells[2:6]) + f" | {cells[8]}")
    print("\n| search | p50 ms | p99 ms |\n| --- | --- | --- |")
    for label, times in timings.items():
        print(f"| {label} | {statistics.median(times):.1f} | {pct(times, 0.99):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
