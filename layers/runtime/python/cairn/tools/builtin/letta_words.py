"""Letta 0.16.1's descriptions of its built-in tools, word for word, where a docstring's
first line cannot carry them (long lines, examples): agents written for Letta are prompted with
them, and Letta's tool listing shows them (tests compare with a real server's)."""

from __future__ import annotations

DESCRIPTIONS = {
    "fetch_webpage": (
        "Fetch a webpage and convert it to markdown/text format using Exa API (if available) "
        "or trafilatura/readability."
    ),
    "web_search": (
        "Search the web using Exa's AI-powered search engine and retrieve relevant content.\n"
        "\n"
        "Examples:\n"
        '    web_search("Tesla Q1 2025 earnings report", num_results=5, category="financial '
        'report")\n'
        '    web_search("Latest research in large language models", category="research '
        'paper", include_domains=["arxiv.org", "paperswithcode.com"])\n'
        '    web_search("Letta API documentation core_memory_append", num_results=3)\n'
        "\n"
        "    Args:\n"
        "        query (str): The search query to find relevant web content.\n"
        "        num_results (int, optional): Number of results to return (1-100). Defaults "
        "to 10.\n"
        "        category (Optional[Literal], optional): Focus search on specific content "
        "types. Defaults to None.\n"
        "        include_text (bool, optional): Whether to retrieve full page content. "
        "Defaults to False (only returns summary and highlights, since the full text usually "
        "will overflow the context window).\n"
        "        include_domains (Optional[List[str]], optional): List of domains to include "
        "in search results. Defaults to None.\n"
        "        exclude_domains (Optional[List[str]], optional): List of domains to exclude "
        "from search results. Defaults to None.\n"
        "        start_published_date (Optional[str], optional): Only return content "
        "published after this date (ISO format). Defaults to None.\n"
        "        end_published_date (Optional[str], optional): Only return content published "
        "before this date (ISO format). Defaults to None.\n"
        "        user_location (Optional[str], optional): Two-letter country code for "
        'localized results (e.g., "US"). Defaults to None.\n'
        "\n"
        "    Returns:\n"
        "        str: A JSON-encoded string containing search results with title, URL, "
        "content, highlights, and summary."
    ),
    "run_code_with_tools": (
        "Run code with access to the tools of the agent. Only support python. You can "
        "directly invoke the tools of the agent in the code."
    ),
    "memory_apply_patch": (
        "Apply a unified-diff style patch to a memory block by anchoring on content and "
        "context (not line numbers).\n"
        "\n"
        "The patch format is a simplified unified diff that supports one or more hunks. Each "
        "hunk may optionally\n"
        "start with a line beginning with `@@` and then contains lines that begin with one "
        "of:\n"
        '- " " (space): context lines that must match the current memory content\n'
        '- "-": lines to remove (must match exactly in the current content)\n'
        '- "+": lines to add\n'
        "\n"
        "Notes:\n"
        '- Do not include line number prefixes like "Line 12:" anywhere in the patch. Line '
        "numbers are for display only.\n"
        "- Do not include the line-number warning banner. Provide only the text to edit.\n"
        "- Tabs are normalized to spaces for matching consistency.\n"
        "\n"
        "Examples:\n"
        "        Simple replacement:\n"
        '            label="human",\n'
        "            patch:\n"
        "                @@\n"
        "                -Their name is Alice\n"
        "                +Their name is Bob\n"
        "\n"
        "        Replacement with surrounding context for disambiguation:\n"
        '            label="persona",\n'
        "            patch:\n"
        "                @@\n"
        "                 Persona:\n"
        "                -Friendly and curious\n"
        "                +Friendly, curious, and precise\n"
        "                 Likes: Hiking\n"
        "\n"
        "        Insertion (no deletions) between two context lines:\n"
        '            label="todos",\n'
        "            patch:\n"
        "                @@\n"
        "                 - [ ] Step 1: Gather requirements\n"
        "                 + [ ] Step 1.5: Clarify stakeholders\n"
        "                 - [ ] Step 2: Draft design\n"
        "\n"
        "    Returns:\n"
        "        str: A success message if the patch applied cleanly; raises ValueError "
        "otherwise."
    ),
    "send_message_to_agent_async": (
        "Sends a message to a specific Letta agent within the same organization. The "
        "sender's identity is automatically included, so no explicit introduction is "
        "required in the message. This function does not expect a response from the target "
        "agent, making it suitable for notifications or one-way communication."
    ),
    "send_message_to_agent_and_wait_for_reply": (
        "Sends a message to a specific Letta agent within the same organization and waits "
        "for a response. The sender's identity is automatically included, so no explicit "
        "introduction is needed in the message. This function is designed for two-way "
        "communication where a reply is expected."
    ),
    "send_message_to_agents_matching_tags": (
        "Sends a message to all agents within the same organization that match the specified "
        "tag criteria. Agents must possess *all* of the tags in `match_all` and *at least "
        "one* of the tags in `match_some` to receive the message."
    ),
    "rethink_user_memory": (
        "Rewrite memory block for the main agent, new_memory should contain all current "
        "information from the block that is not outdated or inconsistent, integrating any "
        "new information, resulting in a new memory block that is organized, readable, and "
        "comprehensive."
    ),
    "store_memories": (
        "Persist dialogue that is about to fall out of the agent\u2019s context window."
    ),
    "search_memory": (
        "Look in long-term or earlier-conversation memory only when the user asks about "
        "something missing from the visible context. The user\u2019s latest utterance is sent "
        "automatically as the main query."
    ),
}
