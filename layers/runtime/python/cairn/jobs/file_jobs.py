"""A file's processing job: its original parsed to text, the text chunked, the chunks
embedded with the folder's config, a batch at a time.

Every stage is written before the next starts (the text and its chunk count together,
then each batch of passages with the count embedded), so a job killed at any point is
resumed by the next delivery or by the sweeper (`unfinished`) from where it stopped: the
text is not parsed twice and no chunk is embedded twice. A file that cannot be read ends in
`error` with the reason; a failing embedding endpoint is retried by the queue, and its last
failed delivery ends the file in `error` (run/driving/worker.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from cairn import faults
from cairn.domain.base import utc_now
from cairn.domain.folders import FileMetadata, FilePassage
from cairn.errors import LimitExceededError
from cairn.jobs import documents, pdf_text
from cairn.llm import deadline
from cairn.run.backends.file_opening import open_for
from cairn.run.steps.step import Engine
from cairn.store import agents, files, folders

logger = logging.getLogger(__name__)
BATCH = 64  # chunks to one embedding request
MAX_CHUNKS = 20_000  # a file's chunks at most (its text is refused past it)
DEFAULT_CHUNK_TOKENS = 300  # Letta's embedding_chunk_size
# Left for one more batch and its write before the invocation ends (else: published again).
BATCH_SECONDS = 30.0

JobStatus = Literal["gone", "done", "error", "completed", "more"]


def process(engine: Engine, org_id: str, file_id: str, read: Callable[[str], bytes]) -> JobStatus:
    """Take the file as far as this invocation's time allows ("more": publish it again)."""
    with engine.db.connection() as conn:
        file = files.get(conn, org_id, file_id)
        folder = folders.get(conn, org_id, file.folder_id) if file else None
        text = files.content(conn, org_id, file_id) if file else None
    if file is None or folder is None:
        return "gone"
    if file.processing_status in ("completed", "error"):
        return "done"
    config = folder.embedding_config
    size = config.embedding_chunk_size or DEFAULT_CHUNK_TOKENS
    if text is not None:
        pieces = documents.chunks(text, size)
    else:
        try:
            pieces = _parse(engine, file, read, size)
        except documents.DocumentError as err:
            _failed(engine, file, str(err))
            return "error"
        faults.reached("file_parsed")
    embedder = engine.embedder_for(config, org_id)
    with engine.db.connection() as conn:
        done = files.passages_done(conn, file_id)
    while done < len(pieces):
        left = deadline.seconds_left()
        if left is not None and left < BATCH_SECONDS:
            return "more"
        batch = pieces[done : done + BATCH]
        try:
            vectors = embedder.embed(batch)
        except LimitExceededError as err:  # the organization's budget is spent: it says so
            _failed(engine, file, str(err))
            return "error"
        made = [
            FilePassage(
                organization_id=org_id,
                folder_id=folder.id,
                file_id=file_id,
                chunk_index=done + n,
                text=chunk,
                embedding=vector,
                embedding_config=config,
            )
            for n, (chunk, vector) in enumerate(zip(batch, vectors, strict=True))
        ]
        done += len(made)
        with engine.db.transaction() as conn:
            files.add_passages(conn, made)
            if files.set_status(conn, org_id, file_id, "embedding", embedded=done) is None:
                return "gone"  # deleted meanwhile: its passages went with it
        faults.reached("file_batch")
    with engine.db.transaction() as conn:
        finished = files.set_status(
            conn, org_id, file_id, "completed", total=len(pieces), embedded=len(pieces)
        )
        if finished is not None:  # readable now: open it for the folder's agents, as Letta does
            for agent_id in folders.agent_ids(
                conn, org_id, finished.folder_id, after=None, before=None, limit=10_000, order="asc"
            ):
                agent = agents.get(conn, org_id, agent_id)
                seen = {v.file_id for v in files.views(conn, org_id, agent_id)}
                if agent is not None and finished.id not in seen:  # an imported view stays
                    open_for(conn, agent, [finished], utc_now())
    return "completed"


def _parse(
    engine: Engine, file: FileMetadata, read: Callable[[str], bytes], chunk_tokens: int
) -> list[str]:
    """Parse the original, write its text with its chunk count; the chunks (made once)."""
    with engine.db.transaction() as conn:
        files.set_status(conn, file.organization_id, file.id, "parsing")
    try:
        body = read(file.object_key)
    except KeyError:
        raise documents.DocumentError("the file's original is gone from the store") from None
    if file.file_type == documents.PDF:  # read in a child bounded in time and memory
        most = MAX_CHUNKS * chunk_tokens * documents.CHARS_PER_TOKEN
        text = pdf_text.pdf_text(body, pdf_text.Limits(max_chars=most))
    else:
        text = documents.text_of(body)
    pieces = documents.chunks(text, chunk_tokens)
    count = len(pieces)
    if count > MAX_CHUNKS:
        raise documents.DocumentError(
            f"the file makes {count} chunks, over the limit of {MAX_CHUNKS} chunks a file"
        )
    with engine.db.transaction() as conn:  # the text and what it makes, together
        files.put_content(conn, file.organization_id, file.id, text)
        files.set_status(conn, file.organization_id, file.id, "embedding", total=count, embedded=0)
    return pieces


def _failed(engine: Engine, file: FileMetadata, reason: str) -> None:
    logger.warning("file %s could not be processed: %s", file.id, reason)
    with engine.db.transaction() as conn:
        files.set_status(conn, file.organization_id, file.id, "error", error=reason)


def fail(engine: Engine, org_id: str, file_id: str, reason: str) -> None:
    """End a file in error (its job's last delivery failed)."""
    with engine.db.connection() as conn:
        file = files.get(conn, org_id, file_id)
    if file is not None:
        _failed(engine, file, reason)
