"""Files in folders: which kinds are taken, their text, and the chunks that text is embedded
in. Pure functions; the job that runs them is `jobs/file_jobs.py`.

The kinds are Letta 0.16.1's (letta/services/file_processor/file_types.py): PDF, plain
text, Markdown, JSON, CSV, code, HTML, XML and configuration files. As in Letta, every kind
but PDF is kept as the text it is (HTML included: the agent reads and greps its source).
"""

from __future__ import annotations

import io
import mimetypes
from pathlib import PurePosixPath

PDF = "application/pdf"
# Extension -> MIME type: Letta's registry.
_TEXT_TYPES = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".json": "application/json",
    ".jsonl": "application/jsonl",
    ".csv": "text/csv",
    ".py": "text/x-python",
    ".js": "text/javascript",
    ".ts": "text/x-typescript",
    ".java": "text/x-java-source",
    ".cpp": "text/x-c++",
    ".cxx": "text/x-c++",
    ".c": "text/x-c",
    ".h": "text/x-c",
    ".cs": "text/x-csharp",
    ".php": "text/x-php",
    ".rb": "text/x-ruby",
    ".go": "text/x-go",
    ".rs": "text/x-rust",
    ".swift": "text/x-swift",
    ".kt": "text/x-kotlin",
    ".scala": "text/x-scala",
    ".r": "text/x-r",
    ".m": "text/x-objective-c",
    ".html": "text/html",
    ".htm": "text/html",
    ".css": "text/css",
    ".scss": "text/x-scss",
    ".sass": "text/x-sass",
    ".less": "text/x-less",
    ".vue": "text/x-vue",
    ".jsx": "text/x-jsx",
    ".tsx": "text/x-tsx",
    ".xml": "application/xml",
    ".yaml": "text/x-yaml",
    ".yml": "text/x-yaml",
    ".toml": "application/toml",
    ".ini": "text/x-ini",
    ".cfg": "text/x-conf",
    ".conf": "text/x-conf",
    ".sh": "text/x-shellscript",
    ".bash": "text/x-shellscript",
    ".ps1": "text/x-powershell",
    ".bat": "text/x-batch",
    ".cmd": "text/x-batch",
    ".dockerfile": "text/x-dockerfile",
    ".sql": "text/x-sql",
}
_BY_EXTENSION = {**_TEXT_TYPES, ".pdf": PDF}
ALLOWED = frozenset(_BY_EXTENSION.values()) | {"text/x-markdown", "text/xml"}
# A chunk's size in characters per token of the folder's embedding_chunk_size.
CHARS_PER_TOKEN = 4


class DocumentError(ValueError):
    """The file cannot be read as what it says it is; the reason is the file's error."""


def media_type(filename: str, content_type: str | None) -> str | None:
    """The file's MIME type as Letta decides it: the client's if it is a kind taken, else by
    its extension; None when neither is."""
    given = (content_type or "").split(";", 1)[0].strip().lower()
    if given in ALLOWED:
        return given
    guessed = (mimetypes.guess_type(filename)[0] or "").lower()
    if guessed in ALLOWED:
        return guessed
    return _BY_EXTENSION.get(PurePosixPath(filename).suffix.lower())


def pdf_pages(body: bytes) -> int:
    """How many pages a PDF has (cheap: its page tree, no text)."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        return len(PdfReader(io.BytesIO(body)).pages)
    except PyPdfError as err:  # its limits too (LimitReachedError: 500,000 page references)
        raise DocumentError(f"not a readable PDF: {type(err).__name__}: {err}") from None
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:
        # pypdf's parser meets a malformed file with whatever error it runs into
        raise DocumentError(f"not a readable PDF: {type(err).__name__}: {err}") from None


def text_of(body: bytes) -> str:
    """A text file's text: UTF-8 (a PDF's is `jobs/pdf_text.py`'s)."""
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DocumentError(
            f"not UTF-8 text (byte {err.start} cannot be decoded); save it as UTF-8"
        ) from None


def chunks(text: str, chunk_tokens: int) -> list[str]:
    """The text in chunks of about `chunk_tokens` tokens, cut between lines (a line longer
    than a chunk is cut within itself), blank-only chunks left out."""
    size = max(chunk_tokens, 1) * CHARS_PER_TOKEN
    out: list[str] = []
    current: list[str] = []
    length = 0
    for line in text.splitlines():
        while len(line) > size:
            out.append(line[:size])
            line = line[size:]
        if length + len(line) + 1 > size and current:
            out.append("\n".join(current))
            current, length = [], 0
        current.append(line)
        length += len(line) + 1
    if current:
        out.append("\n".join(current))
    return [c for c in out if c.strip()]


def chunk_estimate(text_bytes: int, chunk_tokens: int) -> int:
    """About how many chunks a text of this many bytes makes (to refuse before parsing)."""
    return text_bytes // (max(chunk_tokens, 1) * CHARS_PER_TOKEN) + 1
