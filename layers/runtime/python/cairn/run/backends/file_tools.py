"""Letta's file tools, the step's side: open files into the agent's view, grep them, search
their chunks by meaning. Texts are Letta 0.16.1's (letta/services/tool_executor/
files_tool_executor.py).

Opening and closing change the agent's views (`changed`), which the checkpoint writes with
the rest of the step; the next step's prompt shows them in `<directories>`, rebuilding the
system message by the usual rule. Reads (a file's text, the search) happen here, with no
transaction held.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import datetime

from cairn.domain.agents import file_limits
from cairn.domain.folders import AgentFolder, FileAgent
from cairn.embeddings.base import Embedder
from cairn.memory import file_views
from cairn.store import files
from cairn.store.db import Database

GREP_PAGE_SIZE = 20
MAX_TOTAL_COLLECTED = 1_000
MAX_REGEX_LENGTH = 1_000
GREP_SECONDS = 30.0
MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_TOTAL_BYTES = 200 * 1024 * 1024
MAX_SEARCH_RESULTS = 50
LINES_PER_PASSAGE = 20


class FileWork:
    """The file tools of one step, over the agent's folders as the step loaded them."""

    def __init__(
        self,
        db: Database,
        org_id: str,
        folders: list[AgentFolder],
        *,
        max_files_open: int | None,
        context_window: int | None,
        now: datetime,
        embedder_for: Callable[[AgentFolder], Embedder | None],
    ) -> None:
        self.db, self.org_id, self.folders, self.now = db, org_id, folders, now
        self.max_open = max_files_open or file_limits(context_window)[0]
        self.embedder_for = embedder_for
        self.views: dict[str, FileAgent] = {f.file_name: f for d in folders for f in d.files}
        self.changed: dict[str, FileAgent] = {}  # by file id: what the checkpoint writes
        self.evicted: list[str] = []  # closed to make room, by the last open_files

    def _put(self, view: FileAgent) -> None:
        self.views[view.file_name] = view
        self.changed[view.file_id] = view

    def _touch(self, names: list[str]) -> None:
        for name in names:
            if (view := self.views.get(name)) is not None:
                self._put(view.model_copy(update={"last_accessed_at": self.now}))

    def _close(self, view: FileAgent) -> None:
        self._put(
            view.model_copy(
                update={
                    "is_open": False,
                    "visible_content": None,
                    "start_line": None,
                    "end_line": None,
                }
            )
        )

    # -- open -----------------------------------------------------------------------------

    def open_files(
        self, requests: list[tuple[str, int | None, int | None]], *, close_all_others: bool
    ) -> str:
        if len(requests) > self.max_open:
            raise ValueError(
                f"Cannot open {len(requests)} files: exceeds configured maximum "
                f"limit of {self.max_open} files"
            )
        if not requests:
            raise ValueError("No file requests provided")
        names = [name for name, _, _ in requests]
        closed_by_request = []
        if close_all_others:
            for view in list(self.views.values()):
                if view.is_open and view.file_name not in names:
                    self._close(view)
                    closed_by_request.append(view.file_name)
        evicted: list[str] = []
        previous: dict[str, tuple[int | None, int | None]] = {}
        for name, offset, length in requests:
            start, end = _range(name, offset, length)
            found = self.views.get(name)
            if found is None:
                raise ValueError(
                    f"{name} not attached - did you get the filename correct? Currently you "
                    f"have the following files attached: {sorted(self.views)}"
                )
            view = found
            with self.db.connection() as conn:
                text = files.content(conn, self.org_id, view.file_id) or ""
            lines = file_views.window(text, view.file_type, name, start, end)
            if view.is_open:
                previous[name] = (view.start_line, view.end_line)
            else:
                evicted += self._make_room(keep=names)
            self._put(
                view.model_copy(
                    update={
                        "is_open": True,
                        "visible_content": "\n".join(lines),
                        "last_accessed_at": self.now,
                        "start_line": start + 1 if start is not None else None,
                        "end_line": end,
                    }
                )
            )
        self.evicted = evicted
        return _opened_text(requests, previous, closed_by_request, evicted)

    def _make_room(self, keep: list[str]) -> list[str]:
        """Close the least recently used open files until one more fits."""
        open_now = sorted(
            (v for v in self.views.values() if v.is_open),
            key=lambda v: (v.last_accessed_at, v.file_name),
        )
        closed = []
        while len(open_now) >= self.max_open:
            oldest = next((v for v in open_now if v.file_name not in keep), open_now[0])
            open_now.remove(oldest)
            self._close(oldest)
            closed.append(oldest.file_name)
        return closed

    def close(self, names: list[str] | None = None) -> list[str]:
        """Close these open files (every one without `names`); the names closed."""
        closed = [
            v for v in self.views.values() if v.is_open and (names is None or v.file_name in names)
        ]
        for view in closed:
            self._close(view)
        return [v.file_name for v in closed]

    # -- grep -----------------------------------------------------------------------------

    def grep_files(
        self, pattern: str, *, include: str | None, context_lines: int | None, offset: int | None
    ) -> str:
        if not pattern or not pattern.strip():
            raise ValueError("Empty search pattern provided")
        pattern = pattern.strip()
        regex = _compiled(pattern)
        candidates = list(self.views.values())
        if not candidates:
            return "No files are currently attached to search"
        if include and include.strip():
            include = include.strip()
            wanted = _compiled(_glob(include))
            before = len(candidates)
            candidates = [v for v in candidates if wanted.search(v.file_name)]
            if not candidates:
                return f"No files match the filename pattern '{include}' (filtered {before} files)"
        context = max(context_lines or 0, 0)
        matches: list[tuple[str, int, list[str]]] = []
        matched_files: set[str] = set()
        processed = skipped = total_bytes = 0
        deadline = time.monotonic() + GREP_SECONDS
        for view in candidates:
            if len(matches) >= MAX_TOTAL_COLLECTED or time.monotonic() > deadline:
                break
            with self.db.connection() as conn:
                text = files.content(conn, self.org_id, view.file_id) or ""
            size = len(text.encode())
            total_bytes += size
            if size > MAX_FILE_BYTES or total_bytes > MAX_TOTAL_BYTES:
                skipped += 1
                continue
            processed += 1
            lines = file_views.units(text, view.file_type)
            numbered = [f"{n + 1}: {line}" for n, line in enumerate(lines)]
            for n, line in enumerate(lines):
                if len(matches) >= MAX_TOTAL_COLLECTED:
                    break
                if regex.search(line.strip()):
                    matched_files.add(view.file_name)
                    around = range(max(0, n - context), min(len(lines), n + context + 1))
                    shown = [f"{'>' if k == n else ' '} {numbered[k]}" for k in around]
                    matches.append((view.file_name, n + 1, shown))
        self._touch(sorted(matched_files))
        return _grep_text(pattern, include, matches, matched_files, offset, processed, skipped)

    # -- search by meaning ------------------------------------------------------------------

    def semantic_search_files(self, query: str, limit: int) -> str:
        if not query or not query.strip():
            raise ValueError("Empty search query provided")
        query = query.strip()
        limit = min(max(limit, 1), MAX_SEARCH_RESULTS)
        hits: list[dict[str, object]] = []
        for folder in self.folders:  # each folder's chunks were embedded with its own config
            embedder = self.embedder_for(folder)
            if embedder is None or not folder.files:
                continue
            vector = embedder.embed([query])[0]
            with self.db.connection() as conn:
                hits += files.search(conn, self.org_id, [folder.id], vector, limit)
        hits = sorted(hits, key=lambda h: float(h["distance"]))[:limit]  # type: ignore[arg-type]
        if not hits:
            return f"No semantic matches found for query: '{query}'"
        by_file: dict[str, list[str]] = {}
        for hit in hits:
            by_file.setdefault(str(hit["file_name"]), []).append(str(hit["text"]))
        self._touch(list(by_file))
        return _search_text(query, by_file)


def _range(name: str, offset: int | None, length: int | None) -> tuple[int | None, int | None]:
    if offset is None and length is None:
        return None, None
    if offset is not None and offset < 0:
        raise ValueError(f"Offset for file {name} must be >= 0 (0-indexed), got {offset}")
    if length is not None and length < 1:
        raise ValueError(f"Length for file {name} must be >= 1, got {length}")
    start = offset
    return start, (start + length if start is not None and length is not None else None)


def _opened_text(
    requests: list[tuple[str, int | None, int | None]],
    previous: dict[str, tuple[int | None, int | None]],
    closed_by_request: list[str],
    evicted: list[str],
) -> str:
    def before(name: str) -> str:
        if name not in previous:
            return ""
        start, end = previous[name]
        if start is not None and end is not None:
            return f" (previously lines {start}-{end})"
        return (
            f" (previously lines {start}-end)" if start is not None else " (previously full file)"
        )

    summaries = []
    for name, offset, length in requests:
        if offset is not None and length is not None:
            summaries.append(f"{name} (lines {offset + 1}-{offset + length}){before(name)}")
        elif offset is not None:
            summaries.append(f"{name} (lines {offset + 1}-end){before(name)}")
        else:
            summaries.append(f"{name}{before(name)}")
    if len(requests) == 1:
        text = f"* Opened {summaries[0]}"
    else:
        text = f"* Opened {len(requests)} files: {', '.join(summaries)}"
    if closed_by_request:
        text += (
            f"\nNote: Closed {len(closed_by_request)} file(s) due to close_all_others=True: "
            f"{', '.join(closed_by_request)}"
        )
    if evicted:
        text += (
            f"\nNote: Closed {len(evicted)} least recently used file(s) due to open file "
            f"limit: {', '.join(evicted)}"
        )
    return text


def _compiled(pattern: str) -> re.Pattern[str]:
    if len(pattern) > MAX_REGEX_LENGTH:
        raise ValueError(f"Pattern too complex: {len(pattern)} chars > {MAX_REGEX_LENGTH} limit")
    try:
        return re.compile(pattern, re.IGNORECASE | re.MULTILINE)
    except re.error as err:
        raise ValueError(f"Invalid regex pattern: {err}") from None


def _glob(include: str) -> str:
    """Letta's include: a simple glob (`*.py`) becomes a regex; anything else is one."""
    if "*" in include and not any(c in include for c in "^$()[]{}\\+"):
        regex = include.replace(".", r"\.").replace("*", ".*").replace("?", ".")
        return regex if regex.endswith("$") else regex + "$"
    return include


def _grep_text(
    pattern: str,
    include: str | None,
    matches: list[tuple[str, int, list[str]]],
    matched_files: set[str],
    offset: int | None,
    processed: int,
    skipped: int,
) -> str:
    total = len(matches)
    if total == 0:
        summary = f"No matches found for pattern: '{pattern}'"
        if include:
            summary += f" in files matching '{include}'"
        if skipped:
            summary += f" (searched {processed} files, skipped {skipped})"
        return summary
    first = max(offset or 0, 0)
    last = first + GREP_PAGE_SIZE
    capped = total >= MAX_TOTAL_COLLECTED
    shown_to = min(last, total)
    if capped:
        cap = MAX_TOTAL_COLLECTED
        summary = (
            f"Found {cap}+ total matches across {len(matched_files)} files (showing "
            f"matches {first + 1}-{shown_to} of {cap}+)"
        )
    else:
        summary = (
            f"Found {total} total matches across {len(matched_files)} files (showing "
            f"matches {first + 1}-{shown_to} of {total})"
        )
    if skipped:
        summary += f"\nNote: Skipped {skipped} files due to size limits"
    out = [summary, "=" * 80]
    counts: dict[str, int] = {}
    for name, _, _ in matches:
        counts[name] = counts.get(name, 0) + 1
    out.append("\nFiles with matches:")
    for name, count in sorted(counts.items(), key=lambda item: item[1], reverse=True):
        plus = "+" if capped and count >= MAX_TOTAL_COLLECTED else ""
        out.append(f"  - {name}: {count}{plus} matches")
    out.append("")
    for name, line, context in matches[first:last]:
        out.append(f"\n=== {name}:{line} ===\n" + "\n".join(context))
    out.append("")
    if last < total:
        out.append(f'To see more matches, call: grep_files(pattern="{pattern}", offset={last})')
        if capped:
            out.append(
                f"Note: Only the first {MAX_TOTAL_COLLECTED} matches were collected. "
                "There may be more matches beyond this limit."
            )
    elif capped:
        out.append(
            "Showing last page of collected matches. There may be more matches beyond "
            "the collection limit."
        )
    else:
        out.append("No more matches to show.")
    return "\n".join(out)


def _search_text(query: str, by_file: dict[str, list[str]]) -> str:
    out: list[str] = []
    number = 0
    for name, texts in by_file.items():
        for text in texts:
            number += 1
            lines = text.strip().splitlines()
            body = [f"  {line}" for line in lines[:LINES_PER_PASSAGE]]
            if len(lines) > LINES_PER_PASSAGE:
                body.append(f"  ... [truncated {len(lines) - LINES_PER_PASSAGE} more lines]")
            out.append(f"\n=== {name} (passage #{number}) ===\n" + "\n".join(body))
    plural = "s" if len(by_file) != 1 else ""
    summary = f"Found {number} semantic matches in {len(by_file)} file{plural} for query: '{query}'"
    return "\n".join([summary, "=" * len(summary), *out])
