"""Compiled memory and the system message, byte for byte as Letta renders them.

Pure functions: no I/O, no clock. Callers pass "now" and the counts in, so a render is
reproducible and the rebuild rule can compare two renders exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from cairn.domain.blocks import Block

CORE_MEMORY_PLACEHOLDER = "{CORE_MEMORY}"
LINE_NUMBER_WARNING = (
    "# NOTE: Line numbers shown below (with arrows like '1→') are to help during editing. "
    "Do NOT include line number prefixes in your memory edit tool calls."
)
TOOL_USAGE_RULES_DESCRIPTION = (
    "The following constraints define rules for tool usage and guide desired behavior. "
    "These rules must be followed to ensure proper tool execution and workflow. "
    "A single response may contain multiple tool calls."
)
# Agent types whose blocks are shown with line numbers when the model is Anthropic's.
LINE_NUMBERED_AGENT_TYPES = frozenset({"sleeptime_agent", "memgpt_v2_agent", "letta_v1_agent"})
# Agent types that carry no core-memory blocks in their prompt.
BLOCKLESS_AGENT_TYPES = frozenset({"react_agent", "workflow_agent"})

_METADATA_OPEN, _METADATA_CLOSE = "<memory_metadata>", "</memory_metadata>"


def uses_line_numbers(agent_type: str, provider: str) -> bool:
    return provider == "anthropic" and agent_type in LINE_NUMBERED_AGENT_TYPES


@dataclass(frozen=True)
class MemoryMetadata:
    """What `<memory_metadata>` reports; it changes every turn and never forces a rebuild."""

    now: datetime
    timezone: str = "UTC"
    last_modified: datetime | None = None
    recall_count: int = 0
    archival_count: int = 0
    archival_tags: Sequence[str] = field(default_factory=tuple)


def render_block(block: Block, *, line_numbers: bool) -> str:
    lines = [f"<{block.label}>", "<description>", block.description or "", "</description>"]
    lines.append("<metadata>")
    if block.read_only:
        lines.append("- read_only=true")
    lines += [f"- chars_current={len(block.value)}", f"- chars_limit={block.limit}", "</metadata>"]
    if line_numbers:
        lines += ["<warning>", LINE_NUMBER_WARNING, "</warning>"]
        value = "\n".join(f"{n}→ {line}" for n, line in enumerate(block.value.split("\n"), 1))
    else:
        value = block.value
    lines += ["<value>", value, "</value>", f"</{block.label}>"]
    return "\n".join(lines)


def render_memory_blocks(blocks: Sequence[Block], *, line_numbers: bool) -> str:
    rendered = "\n\n".join(render_block(b, line_numbers=line_numbers) for b in blocks)
    return (
        "<memory_blocks>\n"
        "The following memory blocks are currently engaged in your core memory unit:\n\n"
        f"{rendered}\n\n"
        "</memory_blocks>"
    )


def render_tool_usage_rules(lines: Sequence[str]) -> str:
    return (
        f"<tool_usage_rules>\n{TOOL_USAGE_RULES_DESCRIPTION}\n\n"
        + "\n".join(lines)
        + "\n</tool_usage_rules>"
    )


def render_memory_section(
    blocks: Sequence[Block],
    *,
    agent_type: str,
    provider: str,
    tool_rule_lines: Sequence[str] = (),
    directories: str | None = None,
) -> str:
    """Everything of compiled memory but `<memory_metadata>`: what the rebuild rule compares.

    `directories` is the already rendered `<directories>` element, when files are open.
    """
    parts: list[str] = []
    if agent_type not in BLOCKLESS_AGENT_TYPES:
        visible = [b for b in blocks if not b.hidden]
        parts.append(
            render_memory_blocks(visible, line_numbers=uses_line_numbers(agent_type, provider))
        )
    if tool_rule_lines:
        parts.append(render_tool_usage_rules(tool_rule_lines))
    if directories:
        parts.append(directories)
    return "\n\n".join(parts)


def letta_time(moment: datetime, timezone: str) -> str:
    """Letta's time format in the agent's timezone: `2026-01-20 02:13:45 PM PST-0800`."""
    return moment.astimezone(ZoneInfo(timezone)).strftime("%Y-%m-%d %I:%M:%S %p %Z%z")


def render_memory_metadata(meta: MemoryMetadata) -> str:
    local_now = meta.now.astimezone(ZoneInfo(meta.timezone))
    lines = [
        _METADATA_OPEN,
        f"- The current system date is: {local_now.strftime('%B %d, %Y')}",
        "- Memory blocks were last modified: "
        + letta_time(meta.last_modified or meta.now, meta.timezone),
        f"- {meta.recall_count} previous messages between you and the user are stored in "
        "recall memory (use tools to access them)",
    ]
    if meta.archival_count > 0:
        lines.append(
            f"- {meta.archival_count} total memories you created are stored in archival "
            "memory (use tools to access them)"
        )
    if meta.archival_tags:
        lines.append(f"- Available archival memory tags: {', '.join(meta.archival_tags)}")
    lines.append(_METADATA_CLOSE)
    return "\n".join(lines)


def compile_system_message(template: str, memory_section: str, metadata: MemoryMetadata) -> str:
    """The system message: `{CORE_MEMORY}` replaced by compiled memory, else appended."""
    compiled = f"{memory_section}\n\n{render_memory_metadata(metadata)}"
    if CORE_MEMORY_PLACEHOLDER in template:
        return template.replace(CORE_MEMORY_PLACEHOLDER, compiled)
    return f"{template}\n\n{compiled}"


def _without_metadata(system_text: str) -> str:
    # The metadata element is the last one compiled memory writes; taking the last
    # occurrence keeps a block value that quotes the tag from confusing the comparison.
    start = system_text.rfind(_METADATA_OPEN)
    end = system_text.find(_METADATA_CLOSE, start)
    if start < 0 or end < 0:
        return system_text
    return system_text[:start] + system_text[end + len(_METADATA_CLOSE) :]


def needs_rebuild(stored_system_text: str, template: str, memory_section: str) -> bool:
    """Whether the stored system message no longer shows this memory section (or template).

    Only the memory section and template count: a new date, clock or count in
    `<memory_metadata>` never forces a rebuild (it would invalidate the provider's cache).
    """
    expected = compile_system_message(
        template, memory_section, MemoryMetadata(now=datetime(2000, 1, 1, tzinfo=ZoneInfo("UTC")))
    )
    return _without_metadata(stored_system_text) != _without_metadata(expected)
