"""Files in folders at corpus scale: a 1,000-page PDF uploaded, processed to searchable, and
searched.

Runs the real pipeline in one process on an embedded Postgres: the upload service (type,
page and size checks, the original to the document store, the row, the job), the file job
on the in-process files queue (pypdf, chunking, the local MiniLM embedder on CPU, batches
of 64 written one transaction each), then `semantic_search_files` and `grep_files` as a
step runs them. Prints the PDF's size, chunks, upload-to-searchable time with its parse and
embedding parts, and p50/p99 latency of each search (semantic with and without embedding
the query).

    .venv/bin/python bench/documents.py [--pages 1000] [--queries 100]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fpdf import FPDF  # noqa: E402

from cairn.assembly.build import build_runtime  # noqa: E402
from cairn.config import Settings  # noqa: E402
from cairn.domain import Organization  # noqa: E402
from cairn.domain.base import utc_now  # noqa: E402
from cairn.local.postgres import start_embedded  # noqa: E402
from cairn.run.backends.file_tools import FileWork  # noqa: E402
from cairn.services import files as file_service  # noqa: E402
from cairn.services import folders as folder_service  # noqa: E402
from cairn.services.requests import FolderCreate  # noqa: E402
from cairn.store import Database, files, tenancy  # noqa: E402
from cairn.store.migrate import apply_migrations  # noqa: E402

WORDS = [
    "trail",
    "stone",
    "cairn",
    "north",
    "river",
    "bridge",
    "valley",
    "ridge",
    "summit",
    "marker",
    "path",
    "weather",
    "spring",
    "flood",
    "map",
    "compass",
    "shelter",
    "water",
    "route",
    "guide",
    "camp",
    "forest",
    "meadow",
]


def corpus_pdf(pages: int, rng: random.Random) -> bytes:
    """A text PDF of `pages` pages of about 350 words each (a dense report)."""
    made = FPDF()
    made.set_compression(True)
    made.set_font("helvetica", size=9)
    for page in range(pages):
        made.add_page()
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."
            for _ in range(30)
        ]
        made.multi_cell(0, 4, f"Section {page + 1}. " + " ".join(sentences))
    return bytes(made.output())


def pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    rng = random.Random(7)
    started = time.perf_counter()
    body = corpus_pdf(args.pages, rng)
    print(
        f"pdf: {args.pages} pages, {len(body) / 1e6:.2f} MB, made in "
        f"{time.perf_counter() - started:.1f} s"
    )
    with tempfile.TemporaryDirectory() as tmp:
        dsn, server = (
            (os.environ["DATABASE_URL"], None)
            if os.environ.get("DATABASE_URL")
            else (start_embedded(Path(tmp) / "pgdata", cleanup="delete"))
        )
        apply_migrations(dsn)
        db = Database(dsn, max_size=4)
        rt = build_runtime(Settings(data_dir=Path(tmp) / "data"), db=db)
        with db.transaction() as conn:
            org = tenancy.create_organization(conn, Organization(name="bench")).id
        folder = folder_service.create(rt, org, FolderCreate(name="corpus"))
        print(
            f"embedding: {folder.embedding_config.handle} "
            f"({folder.embedding_config.embedding_chunk_size} tokens a chunk)"
        )
        upload_at = time.perf_counter()
        made = file_service.upload(
            rt,
            org,
            folder.id,
            body,
            filename="corpus.pdf",
            content_type="application/pdf",
            duplicate_handling="error",
            name=None,
        ).file
        answered = time.perf_counter() - upload_at
        parsed_at = None
        while True:
            with db.connection() as conn:
                state = files.get(conn, org, made.id)
            assert state is not None
            if parsed_at is None and state.processing_status == "embedding":
                parsed_at = time.perf_counter() - upload_at
            if state.processing_status in ("completed", "error"):
                break
            time.sleep(0.05)
        searchable = time.perf_counter() - upload_at
        assert state.processing_status == "completed", state.error_message
        print(
            f"upload answered in {answered * 1000:.0f} ms; searchable after {searchable:.1f} s"
            f" (parsed and chunked by {parsed_at or 0:.1f} s; {state.total_chunks} chunks, "
            f"{state.total_chunks / max(searchable - (parsed_at or 0), 1e-9):.0f} "
            "chunks/s embedded)"
        )

        embedder = rt.engine.embedder_for(folder.embedding_config)
        view = folder_views(db, org, folder.id, made.id)
        work = FileWork(
            db,
            org,
            view,
            max_files_open=5,
            context_window=32000,
            now=utc_now(),
            embedder_for=lambda _: embedder,
        )
        queries = [" ".join(rng.choice(WORDS) for _ in range(4)) for _ in range(args.queries)]
        semantic, bare, grep = [], [], []
        vectors = embedder.embed(queries)
        for query, vector in zip(queries, vectors, strict=True):
            at = time.perf_counter()
            work.semantic_search_files(query, 5)
            semantic.append((time.perf_counter() - at) * 1000)
            at = time.perf_counter()
            with db.connection() as conn:
                files.search(conn, org, [folder.id], vector, 5)
            bare.append((time.perf_counter() - at) * 1000)
        for query in queries[:20]:
            at = time.perf_counter()
            work.grep_files(
                query.split()[0] + " " + query.split()[1],
                include=None,
                context_lines=1,
                offset=None,
            )
            grep.append((time.perf_counter() - at) * 1000)
        for name, values in (
            ("semantic_search_files (query embedded)", semantic),
            ("file passage search (vector given)", bare),
            ("grep_files (whole corpus)", grep),
        ):
            print(
                f"{name}: p50 {statistics.median(values):.1f} ms, p99 "
                f"{pct(values, 0.99):.1f} ms ({len(values)} queries)"
            )
        print(f"load: {os.getloadavg()[0]:.2f} (1 min), cpus: {os.cpu_count()}")
        db.close()
        if server is not None:
            server.cleanup()  # type: ignore[attr-defined]
    return 0


def folder_views(db: Database, org: str, folder_id: str, file_id: str) -> list:  # type: ignore[type-arg]
    """The folder as an agent with it attached sees it (the bench has no agent)."""
    from cairn.domain.folders import AgentFolder, FileAgent

    with db.connection() as conn:
        file = files.get(conn, org, file_id)
    assert file is not None
    view = FileAgent(
        agent_id="bench",
        file_id=file.id,
        folder_id=folder_id,
        organization_id=org,
        file_name=file.file_name,
        file_type=file.file_type,
    )
    return [AgentFolder(id=folder_id, name="corpus", files=[view])]


if __name__ == "__main__":
    raise SystemExit(main())
