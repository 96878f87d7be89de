"""Letta's file tools over the folders attached to an agent: open (a window into core
memory's `<directories>`), grep, and search by meaning. Descriptions are Letta 0.16.1's
(`letta_words`); the work is the step's (run/backends/file_tools.py)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from cairn.tools.context import ToolContext


class FileOpenRequest(BaseModel):
    file_name: str = Field(description="Name of the file to open")
    offset: int | None = Field(
        default=None,
        description="Optional offset for starting line number (0-indexed). If not specified, "
        "starts from beginning of file.",
    )
    length: int | None = Field(
        default=None,
        description="Optional number of lines to view from offset (inclusive). If not "
        "specified, views to end of file.",
    )


def open_files(
    ctx: ToolContext, file_requests: list[FileOpenRequest], close_all_others: bool = False
) -> str:
    """Open files into core memory.

    Args:
        file_requests: List of file open requests, each specifying file name and optional view range.
        close_all_others: If True, closes all other currently open files first. Defaults to False.
    """  # noqa: E501 (Letta's words, one line as the model reads them)
    requests = [(r.file_name, r.offset, r.length) for r in file_requests]
    return ctx.open_files(requests, close_all_others=close_all_others)


def grep_files(
    ctx: ToolContext,
    pattern: str,
    include: str | None = None,
    context_lines: int | None = 1,
    offset: int | None = None,
) -> str:
    """Search the attached files for a pattern.

    Args:
        pattern: Keyword or regex pattern to search within file contents.
        include: Optional keyword or regex pattern to filter filenames to include in the search.
        context_lines: Number of lines of context to show before and after each match.
            Equivalent to `-C` in grep_files. Defaults to 1.
        offset: Number of matches to skip before showing results. Used for pagination.
            For example, offset=20 shows matches starting from the 21st match.
            Use offset=0 (or omit) for first page, offset=20 for second page,
            offset=40 for third page, etc. The tool will tell you the exact
            offset to use for the next page.
    """
    return ctx.grep_files(pattern, include=include, context_lines=context_lines, offset=offset)


def semantic_search_files(ctx: ToolContext, query: str, limit: int = 5) -> str:
    """Search the attached files by meaning.

    Args:
        query: The search query text to find semantically similar content.
        limit: Maximum number of results to return (default: 5)
    """
    return ctx.semantic_search_files(query, limit)
