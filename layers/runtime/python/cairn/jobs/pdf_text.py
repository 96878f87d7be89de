"""A PDF's text, read in a child process bounded in time and memory.

pypdf is pure Python and cannot be interrupted: an 11 KB PDF whose twelve pages share one
3 MB content stream held a files worker for 44 s, and a Flate bomb ran it out of memory.
So the pages are read by a child (`python -m cairn.jobs.pdf_text`: the PDF on its stdin,
one JSON line a page on its stdout) that caps its own address space, and the parent:

- kills it when a page takes longer than `page_seconds` or the file than `file_seconds`;
- counts the text as it comes and kills it once it passes `max_chars` (the chunk cap),
  instead of learning that after the whole file was extracted;
- reads a content stream that several pages share once (in the child).

Each limit ends the file in `error` with a reason its owner can act on (`DocumentError`).
Starting the child costs ~0.3 s a file (an interpreter and pypdf's import).
"""

from __future__ import annotations

import io
import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from cairn.jobs.documents import DocumentError


@dataclass(frozen=True)
class Limits:
    max_chars: int  # the file's text at most (its chunk cap in characters)
    page_seconds: float = 10.0
    file_seconds: float = 60.0
    memory_mb: int = 1024


def pdf_text(body: bytes, limits: Limits) -> str:
    """The PDF's pages' text one after another (DocumentError past a limit)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        "CAIRN_PDF_MEMORY_MB": str(limits.memory_mb),
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "cairn.jobs.pdf_text"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        return _read(child, body, limits)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()


def _read(child: subprocess.Popen[bytes], body: bytes, limits: Limits) -> str:
    assert child.stdin is not None and child.stdout is not None
    try:  # the child reads all of it before it writes anything
        child.stdin.write(body)
        child.stdin.close()
    except BrokenPipeError:
        pass
    started = time.monotonic()
    pages: list[str] = []
    total, count, buffer = 0, None, b""
    with selectors.DefaultSelector() as waiting:
        waiting.register(child.stdout, selectors.EVENT_READ)
        page_started = started
        while True:
            now = time.monotonic()
            if now - started > limits.file_seconds:
                raise DocumentError(
                    f"reading the PDF took over {limits.file_seconds:g} s (at page "
                    f"{len(pages) + 1} of {count}): split it or save it again as a simpler PDF"
                )
            left = min(page_started + limits.page_seconds, started + limits.file_seconds) - now
            if not waiting.select(timeout=max(left, 0.01)):
                if time.monotonic() - page_started >= limits.page_seconds:
                    raise DocumentError(
                        f"page {len(pages) + 1} of the PDF took over {limits.page_seconds:g} s "
                        "to read (a page drawn from a very large content stream?): save it "
                        "again as a simpler PDF"
                    )
                continue
            chunk = os.read(child.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                said: dict[str, Any] = json.loads(line)
                if "error" in said:
                    raise DocumentError(str(said["error"]))
                if "pages" in said:
                    count = said["pages"]
                    continue
                pages.append(str(said["text"]).strip())
                page_started = time.monotonic()
                total += len(pages[-1])
                if total > limits.max_chars:
                    raise DocumentError(
                        f"its text passes {limits.max_chars} characters by page {len(pages)}, "
                        "over a file's limit of chunks: split the file"
                    )
    if child.wait() != 0 or (count is not None and len(pages) < count):
        raise DocumentError(
            f"reading the PDF failed at page {len(pages) + 1} (over {limits.memory_mb} MB of "
            "memory, or a broken file): save it again as a simpler PDF"
        )
    text = "\n\n".join(p for p in pages if p)
    if not text.strip():
        raise DocumentError("the PDF has no text layer (a scan?): nothing to read or search")
    return text


def _child() -> None:
    """The child: the PDF from stdin, a JSON line of its page count, then one a page."""
    import resource

    limit = int(os.environ.get("CAIRN_PDF_MEMORY_MB", "1024")) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    body = sys.stdin.buffer.read()
    out = sys.stdout

    def say(**fields: Any) -> None:
        out.write(json.dumps(fields) + "\n")
        out.flush()

    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(body))
        say(pages=len(reader.pages))
        seen: dict[tuple[Any, ...], str] = {}
        for page in reader.pages:
            key = _contents_key(page)
            if key is None or key not in seen:
                text = page.extract_text() or ""
                if key is not None:
                    seen[key] = text
            say(text=seen[key] if key is not None else text)
    except MemoryError:
        raise
    except Exception as err:  # a parser's error of any kind is the file's, not ours
        say(error=f"not a readable PDF: {type(err).__name__}: {err}")


def _contents_key(page: Any) -> tuple[Any, ...] | None:
    """What identifies a page's content streams (their object numbers) and resources, so
    that pages drawn from the same ones are read once; None if they are inline."""
    contents = page.raw_get("/Contents") if "/Contents" in page else None
    refs: list[Any] = contents if isinstance(contents, list) else [contents]
    numbers = [getattr(r, "idnum", None) for r in refs]
    if not numbers or None in numbers:
        return None
    resources = page.raw_get("/Resources") if "/Resources" in page else None
    # Resources written into the page are compared by what they hold (their fonts' object
    # numbers among it): pages drawn from one stream with the same fonts read the same.
    return (*numbers, getattr(resources, "idnum", None) or repr(resources))


if __name__ == "__main__":
    _child()
