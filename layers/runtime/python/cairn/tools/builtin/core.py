"""The base tools: talking to the user and searching recall and archival memory."""

from __future__ import annotations

from typing import Any, Literal

from cairn.memory.packaging import SEND_MESSAGE_RESULT
from cairn.tools.context import ToolContext


def send_message(ctx: ToolContext, message: str) -> str:
    """Send a message to the user. Ends your turn.

    Args:
        message: The message text. Markdown is allowed; all unicode, including emojis, is kept.
    """
    return SEND_MESSAGE_RESULT


def conversation_search(
    ctx: ToolContext,
    query: str,
    roles: list[Literal["assistant", "user", "tool"]] | None = None,
    limit: int | None = None,
    start_date: str | None = None,
    end_date: str | None = None,
) -> dict[str, Any]:
    """Search your past conversation (recall memory) by meaning and by keywords.

    Args:
        query: What to look for, in words.
        roles: Only messages from these roles; all roles when omitted.
        limit: How many results to return at most (default 5).
        start_date: Only messages from this day or time on: YYYY-MM-DD or an ISO datetime.
        end_date: Only messages up to this day or time: YYYY-MM-DD or an ISO datetime.
    """
    return ctx.conversation_search(
        query,
        roles=list(roles) if roles else None,
        limit=limit,
        start_date=start_date,
        end_date=end_date,
    )


def archival_memory_insert(ctx: ToolContext, content: str, tags: list[str] | None = None) -> str:
    """Store a passage in archival memory, your long-term store, for later search.

    Args:
        content: The passage to keep: one self-contained fact, note or summary.
        tags: Optional tags to find the passage by later.
    """
    return ctx.archival_memory_insert(content, tags=tags)


def archival_memory_search(
    ctx: ToolContext,
    query: str,
    tags: list[str] | None = None,
    tag_match_mode: Literal["any", "all"] = "any",
    top_k: int | None = None,
    start_datetime: str | None = None,
    end_datetime: str | None = None,
) -> list[dict[str, Any]]:
    """Search archival memory by meaning.

    Args:
        query: What to look for, in words.
        tags: Only passages carrying these tags.
        tag_match_mode: "any" to match passages with any of the tags, "all" for all of them.
        top_k: How many passages to return at most.
        start_datetime: Only passages created at or after this ISO date or datetime.
        end_datetime: Only passages created at or before this ISO date or datetime.
    """
    return ctx.archival_memory_search(
        query,
        tags=tags,
        tag_match_mode=tag_match_mode,
        top_k=top_k,
        start_datetime=start_datetime,
        end_datetime=end_datetime,
    )


def fetch_webpage(ctx: ToolContext, url: str) -> str:
    """Fetch a webpage and convert it to markdown/text format.

    Args:
        url: The URL of the webpage to fetch and convert
    """
    return ctx.fetch_webpage(url)


def run_code(
    ctx: ToolContext, code: str, language: Literal["python", "js", "ts", "r", "java"]
) -> str:
    """Run code in a sandbox. Supports Python, Javascript, Typescript, R, and Java.

    Args:
        code: The code to run.
        language: The language of the code.
    """
    return ctx.run_code(code, language, with_tools=False)


def run_code_with_tools(ctx: ToolContext, code: str) -> str:
    """Run Python code in a sandbox with the agent's own tools defined as functions.

    Args:
        code: The python code to run.
    """
    return ctx.run_code(code, "python", with_tools=True)


def web_search(
    ctx: ToolContext,
    query: str,
    num_results: int = 10,
    category: Literal[
        "company",
        "research paper",
        "news",
        "pdf",
        "github",
        "tweet",
        "personal site",
        "linkedin profile",
        "financial report",
    ]
    | None = None,
    include_text: bool = False,
    include_domains: list[str] | None = None,
    exclude_domains: list[str] | None = None,
    start_published_date: str | None = None,
    end_published_date: str | None = None,
    user_location: str | None = None,
) -> str:
    """Search the web using Exa's AI-powered search engine and retrieve relevant content.

    Args:
        query: The search query to find relevant web content.
        num_results: Number of results to return (1-100). Defaults to 10.
        category: Focus search on specific content types. Defaults to None.
        include_text: Whether to retrieve full page content. Defaults to False (only returns summary and highlights, since the full text usually will overflow the context window).
        include_domains: List of domains to include in search results. Defaults to None.
        exclude_domains: List of domains to exclude from search results. Defaults to None.
        start_published_date: Only return content published after this date (ISO format). Defaults to None.
        end_published_date: Only return content published before this date (ISO format). Defaults to None.
        user_location: Two-letter country code for localized results (e.g., "US"). Defaults to None.
    """  # noqa: E501 (Letta's words, each one line as the model reads it)
    return ctx.web_search(
        query,
        num_results=num_results,
        include_text=include_text,
        category=category,
        include_domains=include_domains,
        exclude_domains=exclude_domains,
        start_published_date=start_published_date,
        end_published_date=end_published_date,
        user_location=user_location,
    )
