"""Files in folders through letta-client 1.5.0: uploads of every kind Letta takes (a PDF the
test makes), processed by the queued job to `completed` with their chunks embedded, Letta's
duplicate handling, limits and bad files answered clearly, deletion taking the originals
with it, and another organization seeing none of it."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fpdf import FPDF
from letta_client import BadRequestError, Letta, NotFoundError

from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.api.test_agent_messages import stack_other_org_client
from tests.waiting import eventually

MARKDOWN = "# Cairns\n\nStacked stones mark a trail.\n\n## Care\n\nAdd a stone as you pass.\n"


def pdf(*pages: str) -> bytes:
    made = FPDF()
    made.set_font("helvetica", size=12)
    for text in pages:
        made.add_page()
        made.multi_cell(0, 10, text)
    return bytes(made.output())


def settled(client: Letta, folder_id: str, file_id: str) -> Any:
    """The file once its job has finished (completed or error)."""
    found: list[Any] = []

    def done() -> bool:
        found[:] = [f for f in client.folders.files.list(folder_id) if f.id == file_id]
        return bool(found) and found[0].processing_status in ("completed", "error")

    eventually(done, 60)
    return found[0]


def passages_of(stack: Stack, folder_id: str, page: int = 100) -> list[dict[str, Any]]:
    """Every passage of the folder, walked page by page (the SDK has no method for it)."""
    http = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"})
    found: list[dict[str, Any]] = []
    while True:
        params: dict[str, Any] = {"limit": page, **({"after": found[-1]["id"]} if found else {})}
        got = http.get(f"/v1/folders/{folder_id}/passages", params=params)
        assert got.status_code == 200, got.text
        found += got.json()
        if len(got.json()) < page:
            return found


def documents_of(stack: Stack) -> list[Path]:
    root = stack.runtime.settings.data_dir / "documents"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_files_of_every_kind_are_parsed_chunked_and_embedded(stack: Stack) -> None:
    client = stack.client()
    folder = client.folders.create(name="manuals", embedding_chunk_size=20)
    uploads: list[tuple[str, bytes, str | None]] = [
        ("guide.md", MARKDOWN.encode(), "text/markdown"),
        ("notes.txt", b"line one\nline two\n", "text/plain"),
        ("data.csv", b"name,stones\nada,3\nbob,5\n", "text/csv"),
        ("config.json", b'{"trail": "north", "stones": 12}', "application/json"),
        ("tool.py", b"def add(a, b):\n    return a + b\n", None),  # by its extension
        ("page.html", b"<html><body><h1>Trail</h1><p>Go north.</p></body></html>", "text/html"),
        ("report.pdf", pdf("The northern trail is marked.", "Cairns need care."), None),
    ]
    made = {
        name: client.folders.files.upload(folder.id, file=(name, body, kind))
        for name, body, kind in uploads
    }
    assert made["guide.md"].file_name == "manuals/guide.md"
    assert made["report.pdf"].file_type == "application/pdf"
    assert made["tool.py"].file_type == "text/x-python"
    for name, meta in made.items():
        done = settled(client, folder.id, meta.id)
        assert done.processing_status == "completed", (name, done.error_message)
        assert done.total_chunks and done.chunks_embedded == done.total_chunks
    http = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"})
    pdf_file = http.get(
        f"/v1/sources/{folder.id}/files/{made['report.pdf'].id}", params={"include_content": True}
    ).json()
    assert "northern trail" in pdf_file["content"] and "Cairns need care" in pdf_file["content"]
    html = http.get(
        f"/v1/sources/{folder.id}/files/{made['page.html'].id}", params={"include_content": True}
    ).json()
    assert "<h1>Trail</h1>" in html["content"]  # as Letta: HTML is kept as its source
    passages = passages_of(stack, folder.id, page=3)
    total = sum(f.total_chunks or 0 for f in client.folders.files.list(folder.id))
    assert len(passages) == total and all(p["embedding"] for p in passages)
    assert len({p["id"] for p in passages}) == total  # no page repeats one
    assert {p["file_id"] for p in passages} == {m.id for m in made.values()}
    stats = http.get("/v1/folders/metadata").json()
    assert stats["total_files"] == 7 and stats["total_size"] == sum(len(b) for _, b, _ in uploads)


def test_duplicates_are_handled_as_letta_handles_them(stack: Stack) -> None:
    client = stack.client()
    folder = client.folders.create(name="kb")
    first = client.folders.files.upload(folder.id, file=("a.txt", b"one", "text/plain"))
    suffixed = client.folders.files.upload(folder.id, file=("a.txt", b"two", "text/plain"))
    assert (first.file_name, suffixed.file_name) == ("kb/a.txt", "kb/a_(1).txt")
    http = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"})
    skipped = http.post(
        f"/v1/folders/{folder.id}/upload",
        params={"duplicate_handling": "skip"},
        files={"file": ("a.txt", b"three", "text/plain")},
    )
    assert skipped.headers["X-Upload-Result"] == "skipped" and skipped.json()["id"] == first.id
    with pytest.raises(BadRequestError, match="already exists in folder 'kb'"):
        client.folders.files.upload(
            folder.id, file=("a.txt", b"four", "text/plain"), duplicate_handling="error"
        )
    replaced = client.folders.files.upload(
        folder.id, file=("a.txt", b"five", "text/plain"), duplicate_handling="replace"
    )
    names = sorted(f.file_name for f in client.folders.files.list(folder.id))
    assert names == ["kb/a.txt"] and replaced.id not in (first.id, suffixed.id)
    renamed = client.folders.files.upload(
        folder.id, file=("b.txt", b"six", "text/plain"), name="custom.md"
    )
    assert renamed.file_name == "kb/custom.md" and renamed.original_file_name == "custom.md"
    settled(client, folder.id, replaced.id)
    assert len(documents_of(stack)) == 2  # the replaced ones' originals are gone


def test_bad_uploads_are_refused_naming_the_problem(stack: Stack) -> None:
    client = stack.client()
    folder = client.folders.create(name="kb")
    http = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"})

    def upload(name: str, body: bytes, kind: str) -> httpx.Response:
        return http.post(f"/v1/folders/{folder.id}/upload", files={"file": (name, body, kind)})

    image = upload("photo.png", b"\x89PNG\r\n\x1a\n", "image/png")
    assert image.status_code == 415 and "Unsupported file type: image/png" in image.text
    assert upload("empty.txt", b"", "text/plain").status_code == 400
    broken = upload("broken.pdf", b"%PDF-1.4 not really", "application/pdf")
    assert broken.status_code == 400 and "not a readable PDF" in broken.text
    big = upload("big.txt", b"x" * (5 * 1024 * 1024 + 1), "text/plain")
    assert big.status_code == 413 and "limit of 5242880 bytes" in big.text
    hidden = upload(".env", b"SECRET=1", "text/plain")
    assert hidden.status_code == 400 and "start with '.'" in hidden.text
    assert upload("a.txt", b"x", "text/plain").status_code == 200
    as_json = http.post(f"/v1/folders/{folder.id}/upload", json={"file": "x"})
    assert as_json.status_code == 415  # the route takes a form
    assert [f.file_name for f in client.folders.files.list(folder.id)] == ["kb/a.txt"]
    assert len(documents_of(stack)) == 1  # nothing of the refused ones stored


def test_a_name_too_long_to_store_is_a_400_and_a_replace_deletes_nothing(stack: Stack) -> None:
    """A file is stored as `<folder>/<file>`, at most 255 characters: a long name, or any
    file in a 200-character folder, was a 500."""
    client = stack.client()
    http = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"})
    for folder_name, file_name in (("kb", "n" * 251 + ".txt"), ("f" * 200, "notes.txt" * 7)):
        folder = client.folders.create(name=folder_name)
        sent = http.post(
            f"/v1/folders/{folder.id}/upload", files={"file": (file_name, b"text", "text/plain")}
        )
        assert sent.status_code == 400 and sent.json()["detail"].startswith("file: "), sent.text
        assert "at most 255" in sent.text and client.folders.files.list(folder.id).items == []
    folder = client.folders.create(name="d" * 200)
    kept = client.folders.files.upload(folder.id, file=("a.txt", b"one", "text/plain"))
    # The second of a name gets `_(1)`: one character too many, refused whole.
    long_name = "x" * (255 - 201 - 4) + ".txt"
    assert len(f"{folder.name}/{long_name}") == 255
    first = client.folders.files.upload(folder.id, file=(long_name, b"two", "text/plain"))
    again = http.post(
        f"/v1/folders/{folder.id}/upload", files={"file": (long_name, b"3", "text/plain")}
    )
    assert again.status_code == 400 and "at most 255" in again.text
    replaced = http.post(
        f"/v1/folders/{folder.id}/upload",
        params={"duplicate_handling": "replace"},
        files={"file": (long_name, b"four", "text/plain")},
    )
    assert replaced.status_code == 200, replaced.text
    names = sorted(f.id for f in client.folders.files.list(folder.id))
    assert kept.id in names and first.id not in names and len(names) == 2


def test_a_file_that_cannot_be_read_ends_in_error_with_the_reason(stack: Stack) -> None:
    client = stack.client()
    folder = client.folders.create(name="kb")
    blank = FPDF()
    blank.add_page()
    blank.line(10, 10, 100, 100)  # a drawing, no text
    made = client.folders.files.upload(folder.id, file=("scan.pdf", bytes(blank.output()), None))
    done = settled(client, folder.id, made.id)
    assert done.processing_status == "error" and "no text layer" in (done.error_message or "")
    latin = client.folders.files.upload(
        folder.id, file=("old.txt", "café".encode("latin-1"), "text/plain")
    )
    failed = settled(client, folder.id, latin.id)
    assert failed.processing_status == "error" and "not UTF-8" in (failed.error_message or "")
    assert passages_of(stack, folder.id) == []


def test_deleting_files_and_folders_removes_their_originals_and_passages(stack: Stack) -> None:
    client = stack.client()
    folder = client.folders.create(name="kb")
    keep = client.folders.files.upload(folder.id, file=("keep.md", MARKDOWN.encode(), None))
    drop = client.folders.files.upload(folder.id, file=("drop.md", MARKDOWN.encode(), None))
    for made in (keep, drop):
        settled(client, folder.id, made.id)
    assert len(documents_of(stack)) == 2
    client.folders.files.delete(drop.id, folder_id=folder.id)
    assert [f.id for f in client.folders.files.list(folder.id)] == [keep.id]
    assert {p["file_id"] for p in passages_of(stack, folder.id)} == {keep.id}
    assert len(documents_of(stack)) == 1
    with pytest.raises(NotFoundError):
        client.folders.files.delete(drop.id, folder_id=folder.id)
    client.folders.delete(folder.id)
    assert documents_of(stack) == []
    with stack.runtime.db.connection() as conn:
        left = conn.execute(
            "SELECT (SELECT count(*) FROM files) + (SELECT count(*) FROM file_passages)"
            " + (SELECT count(*) FROM file_contents) AS n"
        )
        assert left.fetchone()["n"] == 0


def test_another_organization_reaches_none_of_it(stack: Stack) -> None:
    client = stack.client()
    folder = client.folders.create(name="kb")
    made = client.folders.files.upload(folder.id, file=("a.md", MARKDOWN.encode(), None))
    settled(client, folder.id, made.id)
    theirs = stack_other_org_client(stack)
    for call in (
        lambda: theirs.folders.files.list(folder.id),
        lambda: theirs.folders.retrieve(folder.id),
        lambda: theirs.folders.files.upload(folder.id, file=("x.txt", b"x", "text/plain")),
        lambda: theirs.folders.files.delete(made.id, folder_id=folder.id),
    ):
        with pytest.raises(NotFoundError):
            call()
    own = theirs.folders.create(name="kb")
    with pytest.raises(NotFoundError):  # our file through their folder
        theirs.folders.files.delete(made.id, folder_id=own.id)
    assert [f.id for f in client.folders.files.list(folder.id)] == [made.id]


def test_a_job_killed_midway_is_resumed_from_where_it_stopped(db: Database) -> None:
    """The job dies after its first batch of embeddings; the sweeper's next round sends it
    again; it goes on from the second batch: every chunk embedded once, none twice."""
    from cairn.jobs import file_jobs
    from cairn.run.driving.sweeper import resume_files

    calls: list[int] = []
    made_in: list[Stack] = []

    def dying(config: Any) -> Any:
        """The stack's own embedder, dying on its second batch (the engine is handed this
        at construction)."""
        from cairn.embeddings import providers

        embedder = providers.embedder_for(config, made_in[0].runtime.settings)

        class Dies:
            model, dim = embedder.model, embedder.dim

            def embed(self, texts: list[str]) -> list[list[float]]:
                calls.append(len(texts))
                if len(calls) == 2:
                    raise KeyboardInterrupt("killed")  # not caught as a failure
                return embedder.embed(texts)

        return Dies()

    with make_stack(db, ports={"embedder_for": dying}) as stack:
        made_in.append(stack)
        client = stack.client()
        folder = client.folders.create(name="kb", embedding_chunk_size=5)
        text = "\n".join(f"line {n} of the trail notes" for n in range(200)).encode()
        original_batch, file_jobs.BATCH = file_jobs.BATCH, 16
        try:
            made = _upload_and_kill(stack, client, folder.id, text)
            assert made.processing_status == "embedding" and made.chunks_embedded == 16
            assert resume_files(stack.runtime, older_than_seconds=0) == 1
            done = settled(client, folder.id, made.id)
        finally:
            file_jobs.BATCH = original_batch
        assert done.processing_status == "completed"
        chunks = passages_of(stack, folder.id)
        assert len(chunks) == done.total_chunks and sum(calls) == done.total_chunks + 16


def _upload_and_kill(stack: Stack, client: Letta, folder_id: str, text: bytes) -> Any:
    """Upload with the queue stopped, run the job here until it is killed, as a worker
    whose process dies; the file as it was left."""
    from cairn.jobs import file_jobs

    queue = stack.runtime.queue
    published: list[Any] = []
    saved: Callable[..., Any] = queue.publish
    queue.publish = published.append  # type: ignore[method-assign]
    try:
        made = client.folders.files.upload(folder_id, file=("notes.txt", io.BytesIO(text)))
    finally:
        queue.publish = saved  # type: ignore[method-assign]
    assert [c.payload["file_id"] for c in published] == [made.id]
    documents = stack.runtime.documents
    assert documents is not None
    with pytest.raises(KeyboardInterrupt):
        file_jobs.process(stack.runtime.engine, stack.org_id, made.id, documents.get)
    return next(f for f in client.folders.files.list(folder_id) if f.id == made.id)
