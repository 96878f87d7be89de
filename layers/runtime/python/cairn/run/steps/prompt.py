"""The request of one step: the refreshed system message, the context and the allowed tools."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cairn.domain.agents import Agent, file_limits
from cairn.domain.blocks import Block
from cairn.domain.folders import AgentFolder
from cairn.domain.messages import ImageContent, Message, TextContent
from cairn.domain.tools import Tool
from cairn.memory.directories import Directory, FileView, render_directories, view_window
from cairn.memory.render import (
    MemoryMetadata,
    compile_system_message,
    needs_rebuild,
    render_memory_section,
)
from cairn.run.steps.policy import LoopPolicy
from cairn.run.steps.state import StepState
from cairn.tools.registry import BUILTIN_TOOLS
from cairn.tools.rules import ToolRulesSolver
from cairn.tools.schema import with_runtime_arguments

# Offline token estimate: providers average about four characters of English per token.
CHARS_PER_TOKEN = 4


def memory_section(
    agent: Agent,
    blocks: list[Block],
    solver: ToolRulesSolver | None = None,
    folders: Sequence[AgentFolder] = (),
) -> str:
    """The core-memory section of the agent's system prompt: the one place it is rendered."""
    rules = solver or ToolRulesSolver.of(agent.tool_rules)
    return render_memory_section(
        blocks,
        agent_type=agent.agent_type,
        provider=agent.llm_config.model_endpoint_type,
        tool_rule_lines=rules.prompt_lines(),
        directories=directories(agent, folders),
    )


def directories(agent: Agent, folders: Sequence[AgentFolder]) -> str:
    """`<directories>`: the attached folders and the agent's open files, within its limits."""
    max_open, char_limit = file_limits(agent.llm_config.context_window)
    max_open = agent.max_files_open or max_open
    char_limit = agent.per_file_view_window_char_limit or char_limit
    shown = [
        Directory(
            name=folder.name,
            description=folder.description,
            instructions=folder.instructions,
            files=[
                FileView(
                    name=f.file_name,
                    limit=char_limit,
                    visible_content=view_window(f.visible_content or "", char_limit)
                    if f.is_open
                    else "",
                )
                for f in folder.files
            ],
        )
        for folder in folders
    ]
    return render_directories(shown, max_files_open=max_open)


def system_text(
    agent: Agent,
    blocks: list[Block],
    *,
    now: datetime,
    recall_count: int = 0,
    archival_count: int = 0,
    archival_tags: list[str] | None = None,
    solver: ToolRulesSolver | None = None,
    folders: Sequence[AgentFolder] = (),
) -> str:
    """The whole system message of an agent with these blocks, as of `now`."""
    metadata = MemoryMetadata(
        now=now,
        timezone=agent.timezone,
        last_modified=max((b.updated_at for b in blocks), default=now),
        recall_count=recall_count,
        archival_count=archival_count,
        archival_tags=archival_tags or [],
    )
    section = memory_section(agent, blocks, solver, folders)
    return compile_system_message(agent.system, section, metadata)


def refreshed_system(
    state: StepState,
    blocks: list[Block],
    solver: ToolRulesSolver,
    *,
    now: datetime,
    force: bool = False,
) -> Message | None:
    """The system message rewritten, or None when the stored one still shows this memory."""
    agent = state.agent
    section = memory_section(agent, blocks, solver, state.folders)
    stored = state.context[0]
    if not force and not needs_rebuild(stored.text, agent.system, section):
        return None
    text = system_text(
        agent,
        blocks,
        now=now,
        # Letta's count: the messages stored beyond those in the context window.
        recall_count=state.recall_count - len(state.context),
        archival_count=state.archival_count,
        archival_tags=state.archival_tags,
        solver=solver,
        folders=state.folders,
    )
    return stored.model_copy(update={"content": [TextContent(text=text)]})


def tool_schemas(
    tools: list[Tool],
    allowed: list[str],
    solver: ToolRulesSolver,
    policy: LoopPolicy,
    *,
    thinking: bool,
) -> list[dict[str, Any]]:
    by_name = {t.name: t for t in tools}
    return [
        with_runtime_arguments(
            _schema_of(by_name[name]),
            request_heartbeat=policy.heartbeats and not solver.is_terminal(name),
            thinking=thinking,
        )
        for name in allowed
        if name in by_name
    ]


def _schema_of(tool: Tool) -> dict[str, Any]:
    """What the model reads of a tool: a built-in's schema as this version has it (Letta's,
    word for word; a row written by an older version may hold other words, as Letta
    re-writes its base tools at start), anything else's as stored."""
    builtin = BUILTIN_TOOLS.get(tool.name)
    if builtin is not None and tool.tool_type == builtin.tool_type:
        return builtin.json_schema
    return tool.json_schema


# What an image counts for in the estimate: about what Anthropic charges a 1.15-megapixel
# image ((w * h) / 750) and more than OpenAI's high detail at 1024 x 1024 (765); counted, so
# that compaction can evict images like text.
IMAGE_TOKENS = 1_600


def estimate_tokens(messages: list[Message]) -> int:
    chars = 0
    for m in messages:
        images = sum(isinstance(p, ImageContent) for p in m.content)
        chars += len(m.text) + images * IMAGE_TOKENS * CHARS_PER_TOKEN
        chars += sum(len(c.function.arguments) + len(c.function.name) for c in m.tool_calls or ())
        chars += sum(len(r.func_response or "") for r in m.tool_returns or ())
    return chars // CHARS_PER_TOKEN


def context_estimate(state: StepState, extra: list[Message]) -> int:
    """The provider's last count plus an estimate of what came after it."""
    agent = state.agent
    upto = agent.context_tokens_upto
    if agent.context_tokens is not None and upto is not None and upto <= len(state.context):
        return agent.context_tokens + estimate_tokens(state.context[upto:] + extra)
    return estimate_tokens(state.context + extra)
