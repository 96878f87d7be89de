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
    "open_files": (
        "Open one or more files and load their contents into files section in core memory. "
        "Maximum of 5 files can be opened simultaneously.\n"
        "\n"
        "Use this when you want to:\n"
        "- Inspect or reference file contents during reasoning\n"
        "- View specific portions of large files (e.g. functions or definitions)\n"
        "- Replace currently open files with a new set for focused context (via "
        "`close_all_others=True`)\n"
        "\n"
        "Examples:\n"
        "        Open single file belonging to a directory named `project_utils` (entire "
        "content):\n"
        '            file_requests = [FileOpenRequest(file_name="project_utils/config.py")]\n'
        "\n"
        "        Open multiple files with different view ranges:\n"
        "            file_requests = [\n"
        '                FileOpenRequest(file_name="project_utils/config.py", offset=0, '
        "length=50),     # Lines 1-50\n"
        '                FileOpenRequest(file_name="project_utils/main.py", offset=100, '
        "length=100),    # Lines 101-200\n"
        '                FileOpenRequest(file_name="project_utils/utils.py")                 '
        "           # Entire file\n"
        "            ]\n"
        "\n"
        "        Close all other files and open new ones:\n"
        "            open_files(agent_state, file_requests, close_all_others=True)\n"
        "\n"
        "    Args:\n"
        "        file_requests (List[FileOpenRequest]): List of file open requests, each "
        "specifying file name and optional view range.\n"
        "        close_all_others (bool): If True, closes all other currently open files "
        "first. Defaults to False.\n"
        "\n"
        "    Returns:\n"
        "        str: A status message"
    ),
    "grep_files": (
        "Searches file contents for pattern matches with surrounding context.\n"
        "\n"
        "Results are paginated - shows 20 matches per call. The response includes:\n"
        "- A summary of total matches and which files contain them\n"
        "- The current page of matches (20 at a time)\n"
        "- Instructions for viewing more matches using the offset parameter\n"
        "\n"
        "Example usage:\n"
        '    First call: grep_files(pattern="TODO")\n'
        '    Next call: grep_files(pattern="TODO", offset=20)  # Shows matches 21-40\n'
        "\n"
        "Returns search results containing:\n"
        "- Summary with total match count and file distribution\n"
        "- List of files with match counts per file\n"
        "- Current page of matches (up to 20)\n"
        "- Navigation hint for next page if more matches exist"
    ),
    "semantic_search_files": (
        "Searches file contents using semantic meaning rather than exact matches.\n"
        "\n"
        "Ideal for:\n"
        "- Finding conceptually related information across files\n"
        "- Discovering relevant content without knowing exact keywords\n"
        "- Locating files with similar topics or themes"
    ),
}
