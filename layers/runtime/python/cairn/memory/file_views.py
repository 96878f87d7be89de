"""What an agent sees of a file: its lines as Letta's LineChunker makes them, numbered, and a
window of them (letta/services/file_processor/chunker/line_chunker.py).

Markdown is read in sentences, code line by line with its indentation, everything else line
by line stripped; blank lines are left out. The view of a window starts with Letta's
`[Viewing ...]` header and numbers each line from 1.
"""

from __future__ import annotations

import re
from typing import Literal

Strategy = Literal["documentation", "code", "lines"]

_DOCUMENTATION = frozenset({"text/markdown", "text/x-markdown"})
_CODE = frozenset(
    {
        "text/x-python",
        "text/javascript",
        "text/x-typescript",
        "text/x-java-source",
        "text/x-c++",
        "text/x-c",
        "text/x-csharp",
        "text/x-php",
        "text/x-ruby",
        "text/x-go",
        "text/x-rust",
        "text/x-swift",
        "text/x-kotlin",
        "text/x-scala",
        "text/x-r",
        "text/x-objective-c",
        "text/html",
        "text/x-vue",
        "text/x-jsx",
        "text/x-tsx",
        "text/x-shellscript",
        "text/x-powershell",
        "text/x-batch",
        "text/x-dockerfile",
        "text/x-sql",
    }
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def strategy(file_type: str) -> Strategy:
    if file_type in _DOCUMENTATION:
        return "documentation"
    return "code" if file_type in _CODE else "lines"


def units(text: str, file_type: str) -> list[str]:
    """The file's lines (sentences, for Markdown), blank ones left out."""
    kind = strategy(file_type)
    if kind == "documentation":
        sentences = (re.sub(r"\s+", " ", s.strip()) for s in _SENTENCE.split(text.strip()))
        return [s for s in sentences if s]
    if kind == "code":
        return [line.rstrip() for line in text.splitlines() if line.rstrip()]
    return [line.strip() for line in text.splitlines() if line.strip()]


def unit_name(file_type: str) -> str:
    return "sentences" if strategy(file_type) == "documentation" else "lines"


class RangeError(ValueError):
    """A window outside the file; the message is Letta's, for the model."""


def window(
    text: str, file_type: str, file_name: str, start: int | None = None, end: int | None = None
) -> list[str]:
    """Lines `start` (0-based) to `end` (exclusive) numbered from 1, after Letta's header."""
    lines, kind = units(text, file_type), unit_name(file_type)
    total = len(lines)
    if start is not None and end is not None and start >= end:
        raise RangeError(f"Invalid range: start ({start}) must be less than end ({end})")
    if start is not None and start >= total:
        raise RangeError(
            f"File {file_name} has only {total} {kind}, but requested offset {start + 1} is "
            "out of range"
        )
    first = max(start or 0, 0)
    last = min(end, total) if end is not None else total
    shown = [f"{n + 1}: {line}" for n, line in enumerate(lines[first:last], start=first)]
    if start is not None and end is not None:
        header = f"[Viewing {kind} {first + 1} to {end} (out of {total} {kind})]"
    elif start is not None:
        header = f"[Viewing {kind} {first + 1} to end (out of {total} {kind})]"
    else:
        header = f"[Viewing file start (out of {total} {kind})]"
    return [header, *shown]
