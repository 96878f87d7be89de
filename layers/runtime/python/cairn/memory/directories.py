"""`<directories>`: the folders attached to an agent and its open files.

Rendering only; opening, closing and grepping files are tools of their own. A file is shown
as open exactly when its view window holds text, as Letta decides it, so the count in
`<file_limits>` and the `status` attribute can never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

TRUNCATED_NOTE = "...[TRUNCATED]"


@dataclass(frozen=True)
class FileView:
    """One file of a folder as one agent sees it: its name and the current view window."""

    name: str
    visible_content: str = ""
    limit: int = 0
    description: str | None = None
    read_only: bool = True

    @property
    def is_open(self) -> bool:
        return bool(self.visible_content)


@dataclass(frozen=True)
class Directory:
    name: str
    description: str | None = None
    instructions: str | None = None
    files: Sequence[FileView] = field(default_factory=tuple)


def view_window(text: str, limit: int) -> str:
    """The part of a file that fits the per-file view limit, marked when it was cut."""
    if len(text) <= limit:
        return text
    keep = max(limit - len(TRUNCATED_NOTE) - 1, 0)
    return f"{text[:keep]}\n{TRUNCATED_NOTE}"


def _render_file(view: FileView) -> list[str]:
    status = "open" if view.is_open else "closed"
    lines = [f'<file status="{status}" name="{view.name}">']
    if view.description:
        lines += ["<description>", view.description, "</description>"]
    lines.append("<metadata>")
    if view.read_only:
        lines.append("- read_only=true")
    lines += [
        f"- chars_current={len(view.visible_content)}",
        f"- chars_limit={view.limit}",
        "</metadata>",
    ]
    if view.is_open:
        lines += ["<value>", view.visible_content, "</value>"]
    lines.append("</file>")
    return lines


def render_directories(directories: Sequence[Directory], *, max_files_open: int | None) -> str:
    """The `<directories>` element, or "" when no folder is attached (nothing is rendered)."""
    if not directories:
        return ""
    lines = ["<directories>"]
    if max_files_open is not None:
        open_count = sum(f.is_open for d in directories for f in d.files)
        lines += [
            "<file_limits>",
            f"- current_files_open={open_count}",
            f"- max_files_open={max_files_open}",
            "</file_limits>",
        ]
    for directory in directories:
        lines.append(f'<directory name="{directory.name}">')
        if directory.description:
            lines.append(f"<description>{directory.description}</description>")
        if directory.instructions:
            lines.append(f"<instructions>{directory.instructions}</instructions>")
        for view in directory.files:
            lines += _render_file(view)
        lines.append("</directory>")
    lines.append("</directories>")
    return "\n".join(lines)
