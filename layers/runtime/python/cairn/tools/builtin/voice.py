"""Letta's voice-sleeptime memory tools, usable by any agent given them.

Letta runs them inside its voice agents' loops; here they are ordinary built-ins over the
step's memory: `rethink_user_memory` rewrites the `human` block (Letta's voice sleeptime
target), `store_memories` keeps numbered lines of the turn's transcript (the `N. line`
lines Letta's voice summarizer sends) as archival passages, `search_memory` searches
archival memory by the latest user message and recall by keywords.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from cairn.tools.context import ToolContext

USER_BLOCK = "human"


def rethink_user_memory(ctx: ToolContext, new_memory: str) -> str:
    """Rewrite the memory block about the user.

    Args:
        new_memory: The new memory with information integrated from the memory block. If there is no new information, then this should be the same as the content in the source block.
    """  # noqa: E501 (Letta's words, one line as the model reads them)
    ctx.memory.memory_rethink(USER_BLOCK, new_memory)
    return ""


def finish_rethinking_memory(ctx: ToolContext) -> str:
    """This function is called when the agent is done rethinking the memory."""
    return ""


class MemoryChunk(BaseModel):
    start_index: int = Field(
        description="Zero-based index of the first evicted line in this chunk."
    )
    end_index: int = Field(description="Zero-based index of the last evicted line (inclusive).")
    context: str = Field(
        description="1-3 sentence paraphrase capturing key facts/details, user preferences, or "
        "goals that this chunk reveals—written for future retrieval."
    )


def store_memories(ctx: ToolContext, chunks: list[MemoryChunk]) -> str:
    """Persist dialogue that is about to fall out of the agent's context window.

    Args:
        chunks: Each chunk pinpoints a contiguous block of **evicted** lines and provides a short, forward-looking synopsis (`context`) that will be embedded for future semantic lookup.
    """  # noqa: E501
    return ctx.store_memories([(c.start_index, c.end_index, c.context) for c in chunks])


def search_memory(
    ctx: ToolContext,
    convo_keyword_queries: list[str] | None = None,
    start_minutes_ago: int | None = None,
    end_minutes_ago: int | None = None,
) -> str:
    """Search long-term and earlier-conversation memory.

    Args:
        convo_keyword_queries: Extra keywords (e.g., order ID, place name). Use *null* if not appropriate for the latest user message.
        start_minutes_ago: Newer bound of the time window for results, specified in minutes ago. Use *null* if no lower time bound is needed.
        end_minutes_ago: Older bound of the time window, in minutes ago. Use *null* if no upper bound is needed.
    """  # noqa: E501
    return ctx.search_memory(convo_keyword_queries or [], start_minutes_ago, end_minutes_ago)
