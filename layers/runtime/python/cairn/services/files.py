"""Files in folders: uploaded (the original to the document store, the row, the job to the
files queue), listed, read, deleted with everything made from them.

An upload answers at once with the file `pending`; the job (jobs/file_jobs.py) takes it
through `parsing` and `embedding` to `completed` or `error`. Names are Letta's:
`<folder name>/<original name>`, a second upload of the same original name being handled
by `duplicate_handling` (skip, error, suffix `_(n)`, replace).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath

from cairn.domain.base import utc_now
from cairn.domain.folders import DuplicateHandling, FileAgent, FileMetadata, FilePassage
from cairn.domain.ids import stable_id
from cairn.domain.runs import file_job_command
from cairn.errors import (
    ConflictError,
    InvalidArgumentError,
    TooLargeError,
    UnsupportedMediaError,
    found,
)
from cairn.jobs import documents, file_jobs
from cairn.run.backends.file_tools import FileWork
from cairn.run.runtime import Runtime
from cairn.services.agents import fetch as fetch_agent
from cairn.services.folders import fetch as fetch_folder
from cairn.services.pages import Page
from cairn.store import files
from cairn.store.db import Connection

logger = logging.getLogger(__name__)
MAX_FILENAME_LENGTH = 255  # Letta's
MAX_FILE_BYTES = 5 * 1024 * 1024  # under the API's request limit, with the form around it
MAX_PDF_PAGES = 2_000
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*]')


@dataclass(frozen=True)
class Uploaded:
    file: FileMetadata
    skipped: bool = False  # a duplicate left as it was (`duplicate_handling=skip`)


def fetch(conn: Connection, org: str, file_id: str, folder_id: str | None = None) -> FileMetadata:
    file = files.get(conn, org, file_id)
    theirs = file is not None and folder_id in (None, file.folder_id)
    return found(file if theirs else None, f"File with id={file_id} not found.")


def clean_name(filename: str) -> str:
    """The file's own name, as Letta's sanitize_filename keeps it: no directories, no
    characters a file system refuses, not hidden, at most 255 characters."""
    name = PureWindowsPath(PurePosixPath(filename).name).name
    name = _UNSAFE.sub("", unicodedata.normalize("NFC", name)).strip()
    base, ext = _split(name)
    if not base or base.startswith("."):
        raise InvalidArgumentError(
            f"file: invalid file name {filename!r} (it must not be empty or start with '.')"
        )
    return base[: MAX_FILENAME_LENGTH - len(ext)] + ext


def _split(name: str) -> tuple[str, str]:
    suffix = PurePosixPath(name).suffix
    return (name[: -len(suffix)], suffix) if suffix else (name, "")


def _checked(body: bytes, filename: str, content_type: str | None, chunk_tokens: int) -> str:
    """The file's MIME type, once it is known to be a file Cairn reads within its limits."""
    media = documents.media_type(filename, content_type)
    if media is None:
        given = (content_type or "").split(";")[0] or "unknown"
        raise UnsupportedMediaError(
            f"Unsupported file type: {given} (filename: {filename}). Supported types: PDF, "
            "text files (.txt, .md), JSON, and code files (.py, .js, .java, etc.)."
        )
    if not body:
        raise InvalidArgumentError("file: the upload is empty")
    if len(body) > MAX_FILE_BYTES:
        raise TooLargeError(
            f"file: {len(body)} bytes, over the limit of {MAX_FILE_BYTES} bytes a file"
        )
    if media == documents.PDF:
        try:
            pages = documents.pdf_pages(body)
        except documents.DocumentError as err:
            raise InvalidArgumentError(f"file: {err}") from None
        if pages > MAX_PDF_PAGES:
            raise InvalidArgumentError(
                f"file: {pages} pages, over the limit of {MAX_PDF_PAGES} pages a PDF"
            )
    elif documents.chunk_estimate(len(body), chunk_tokens) > file_jobs.MAX_CHUNKS:
        raise InvalidArgumentError(
            f"file: its text would make over the limit of {file_jobs.MAX_CHUNKS} chunks a file"
        )
    return media


def _fits(stored_name: str) -> str:
    """A file is stored as `<folder>/<file>` (as Letta names it), at most 255 characters."""
    if len(stored_name) > MAX_FILENAME_LENGTH:
        folder, _, file = stored_name.partition("/")
        raise InvalidArgumentError(
            f"file: its name would be stored as `<folder>/<file>`, {len(stored_name)} "
            f"characters (the folder's name {len(folder)}, the file's {len(file)}); at most "
            f"{MAX_FILENAME_LENGTH}: upload it under a shorter name (`name`)"
        )
    return stored_name


def upload(
    rt: Runtime,
    org: str,
    folder_id: str,
    body: bytes,
    *,
    filename: str,
    content_type: str | None,
    duplicate_handling: DuplicateHandling,
    name: str | None,
) -> Uploaded:
    assert rt.documents is not None
    with rt.db.connection() as conn:
        folder = fetch_folder(conn, org, folder_id)
    chunk = folder.embedding_config.embedding_chunk_size or file_jobs.DEFAULT_CHUNK_TOKENS
    original = name if name else clean_name(filename)
    media = _checked(body, original, content_type, chunk)
    with rt.db.connection() as conn:
        same = files.by_original_name(conn, org, folder.id, original)
    stored_name = None
    if same and duplicate_handling == "error":
        raise InvalidArgumentError(f"File '{original}' already exists in folder '{folder.name}'")
    if same and duplicate_handling == "skip":
        return Uploaded(same[0], skipped=True)
    if same and duplicate_handling == "replace":
        stored_name = _fits(f"{folder.name}/{original}")  # before anything is deleted
        for old in same:
            delete(rt, org, old.id)
    if stored_name is None:
        with rt.db.connection() as conn:
            count = files.count_original_name(conn, folder.id, original)
        base, ext = _split(original)
        stored_name = _fits(
            f"{folder.name}/{original}" if not count else f"{folder.name}/{base}_({count}){ext}"
        )
    file = FileMetadata(
        organization_id=org,
        folder_id=folder.id,
        file_name=stored_name,
        original_file_name=original,
        file_type=media,
        file_size=len(body),
        object_key="",
    )
    file = file.model_copy(update={"object_key": f"{org}/{folder.id}/{file.id}"})
    # The original first: a row never names an object that is not there.
    rt.documents.put(file.object_key, body, media)
    with rt.db.transaction() as conn:
        stored = files.create(conn, file)
    if stored is None:
        rt.documents.delete([file.object_key])
        raise ConflictError(f"A file named '{stored_name}' was uploaded meanwhile; try again.")
    try:
        rt.queue.publish(file_job_command(org, stored.id, lanes=rt.settings.org_files_at_once))
    except Exception:  # the row is the job's record: the sweeper publishes it again
        logger.exception("publishing the job of file %s failed", stored.id)
    return Uploaded(stored)


def list_files(
    rt: Runtime,
    org: str,
    folder_id: str,
    *,
    page: Page,
) -> list[FileMetadata]:
    with rt.db.connection() as conn:
        fetch_folder(conn, org, folder_id)
        return files.list_files(
            conn,
            org,
            folder_id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def retrieve(rt: Runtime, org: str, folder_id: str, file_id: str) -> FileMetadata:
    with rt.db.connection() as conn:
        return fetch(conn, org, file_id, folder_id)


def content_of(rt: Runtime, org: str, file_id: str) -> str | None:
    with rt.db.connection() as conn:
        return files.content(conn, org, file_id)


def delete(rt: Runtime, org: str, file_id: str, folder_id: str | None = None) -> None:
    """The file, its text, passages and agents' views; then its original."""
    assert rt.documents is not None
    with rt.db.transaction() as conn:
        fetch(conn, org, file_id, folder_id)
        key = files.delete(conn, org, file_id)
    if key:
        rt.documents.delete([key])


def passages(
    rt: Runtime,
    org: str,
    folder_id: str,
    *,
    page: Page,
) -> list[FilePassage]:
    with rt.db.connection() as conn:
        fetch_folder(conn, org, folder_id)
        return files.list_passages(
            conn,
            org,
            folder_id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


# -- an agent's views of its files (outside a step: the next step's prompt shows them) -------


@dataclass(frozen=True)
class AgentFile:
    view: FileAgent
    folder_name: str

    @property
    def id(self) -> str:
        return stable_id("file_agent", self.view.agent_id, self.view.file_id)


def agent_files(
    rt: Runtime,
    org: str,
    agent_id: str,
    *,
    is_open: bool | None,
    page: Page,
) -> tuple[list[AgentFile], bool]:
    """A page of the files of the agent's folders as it sees them, and whether more follow."""
    with rt.db.connection() as conn:
        fetch_agent(conn, org, agent_id)
        attached = files.agent_folders(conn, agent_id)
    listed = [
        AgentFile(view, folder.name)
        for folder in attached
        for view in folder.files
        if is_open is None or view.is_open == is_open
    ]
    listed.sort(key=lambda f: (f.view.last_accessed_at, f.id), reverse=page.order == "desc")
    ids = [f.id for f in listed]
    if page.after in ids:
        listed = listed[ids.index(page.after) + 1 :]
    elif page.before in ids:
        listed = listed[: ids.index(page.before)]
    return listed[: page.limit], len(listed) > page.limit


def _view(work: FileWork, file_id: str) -> FileAgent:
    """The agent's view of the file (404 as Letta words it when it has none)."""
    shown = next((v for v in work.views.values() if v.file_id == file_id), None)
    return found(shown, f"File with id={file_id} not found")


def _work(rt: Runtime, conn: Connection, org: str, agent_id: str) -> FileWork:
    agent = fetch_agent(conn, org, agent_id)
    return FileWork(
        rt.db,
        org,
        files.agent_folders(conn, agent_id),
        max_files_open=agent.max_files_open,
        context_window=agent.llm_config.context_window,
        now=utc_now(),
        embedder_for=lambda _: None,
    )


def open_for_agent(rt: Runtime, org: str, agent_id: str, file_id: str) -> list[str]:
    """Open the whole file in the agent's view; the files closed to make room (Letta's)."""
    with rt.db.connection() as conn:
        work = _work(rt, conn, org, agent_id)
    view = _view(work, file_id)
    work.open_files([(view.file_name, None, None)], close_all_others=False)
    with rt.db.transaction() as conn:
        files.put_views(conn, list(work.changed.values()))
    return work.evicted


def close_for_agent(rt: Runtime, org: str, agent_id: str, file_id: str | None) -> list[str]:
    """Close the file (every open one without `file_id`); the names closed."""
    with rt.db.connection() as conn:
        work = _work(rt, conn, org, agent_id)
    names = None
    if file_id is not None:
        view = _view(work, file_id)
        names = [view.file_name]
    closed = work.close(names)
    with rt.db.transaction() as conn:
        files.put_views(conn, list(work.changed.values()))
    return closed
