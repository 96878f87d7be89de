"""Compaction: summarise the oldest part of the context when it outgrows the window.

Evicted messages leave `message_ids` only; they stay in the database as recall memory.
"""

from __future__ import annotations

from datetime import datetime

from cairn.domain.agents import Agent
from cairn.domain.configs import CompactionSettings
from cairn.domain.messages import Message, TextContent
from cairn.llm.types import LLMRequest
from cairn.memory import packaging
from cairn.run.steps.prompt import CHARS_PER_TOKEN, estimate_tokens

DEFAULT_PROMPT = (
    "You condense a conversation between an AI agent and a user so the agent can go on "
    "without the full transcript. Write a concise summary in the agent's voice: what the user "
    "wants, facts and preferences learned, decisions made, tasks still open, and anything the "
    "agent promised. Leave out greetings and tool plumbing. Plain prose, at most 300 words."
)
# The summariser's own request keeps this share of its window free for its answer.
SUMMARY_HEADROOM = 0.75


def settings_of(agent: Agent) -> CompactionSettings:
    return agent.compaction_settings or CompactionSettings()


def cut_index(context: list[Message], settings: CompactionSettings) -> int:
    """Index in `context` of the first message kept; 1 (just the system message) = nothing to do.

    `all` keeps only the system message; `sliding_window` keeps the newest share of the
    context. The cut moves back while it would open on a tool return, so a call and its
    return are always evicted or kept together.
    """
    if len(context) <= 2:
        return 1
    if settings.mode == "all":
        return len(context)
    sizes = [estimate_tokens([m]) + 1 for m in context]
    budget = sum(sizes[1:]) * settings.sliding_window_percentage
    kept, cut = 0, len(context)
    while cut > 1 and kept + sizes[cut - 1] <= budget:
        cut -= 1
        kept += sizes[cut]
    while 1 < cut < len(context) and context[cut].role == "tool":
        cut -= 1
    return cut


def transcript(evicted: list[Message], settings: CompactionSettings) -> list[str]:
    lines = []
    for m in evicted:
        text = m.text or " ".join(c.function.arguments for c in m.tool_calls or ())
        if m.role == "tool":
            text = " ".join(r.func_response or "" for r in m.tool_returns or ())
        if settings.clip_chars and len(text) > settings.clip_chars:
            text = text[: settings.clip_chars] + "…"
        lines.append(f"{m.role}: {text}")
    return lines


def summary_request(agent: Agent, evicted: list[Message]) -> LLMRequest:
    settings = settings_of(agent)
    config = agent.llm_config
    if settings.model:
        config = config.model_copy(update={"model": settings.model})
    prompt = settings.prompt or DEFAULT_PROMPT
    lines = transcript(evicted, settings)
    # Fit the summariser's window: drop the oldest lines (the previous summary survives in
    # its own line, first) until the request is small enough.
    budget = int(config.context_window * SUMMARY_HEADROOM) * CHARS_PER_TOKEN - len(prompt)
    while len(lines) > 1 and sum(len(line) + 1 for line in lines) > budget:
        lines.pop(1 if len(lines) > 2 else 0)
    text = "\n".join(lines)[: max(budget, 0)]

    def msg(role: str, body: str) -> Message:
        return Message(
            organization_id=agent.organization_id,
            agent_id=agent.id,
            role=role,
            content=[TextContent(text=body)],
        )

    return LLMRequest(
        config=config,
        messages=[msg("system", prompt), msg("user", f"Transcript to summarise:\n{text}")],
    )


def summary_message(
    agent: Agent, summary: str, *, now: datetime, run_id: str, step_id: str
) -> Message:
    return Message(
        organization_id=agent.organization_id,
        agent_id=agent.id,
        role="user",
        content=[TextContent(text=packaging.summary(summary, now=now, timezone=agent.timezone))],
        run_id=run_id,
        step_id=step_id,
        created_at=now,
    )
