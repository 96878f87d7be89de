"""Compiled memory and the system message, compared byte for byte with golden files.

Set UPDATE_GOLDEN=1 to rewrite the files after a deliberate format change, then read the diff.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cairn.domain import Block
from cairn.domain.ids import new_id
from cairn.memory.directories import Directory, FileView, render_directories, view_window
from cairn.memory.prompts import base_prompt
from cairn.memory.render import (
    CORE_MEMORY_PLACEHOLDER,
    MemoryMetadata,
    compile_system_message,
    letta_time,
    needs_rebuild,
    render_memory_metadata,
    render_memory_section,
    uses_line_numbers,
)

GOLDEN = Path(__file__).parent / "golden"
ORG = new_id("org")
NOW = datetime(2026, 11, 22, 11, 7, 55, tzinfo=UTC)
TEMPLATE = "<base_instructions>\nYou are a helpful agent.\n</base_instructions>"


def blocks(**overrides: object) -> list[Block]:
    persona = Block(
        organization_id=ORG,
        label="persona",
        value="I am Sam.\nI like\ttea.",
        description="Who I am and how I speak.",
        limit=5000,
    )
    human = Block(organization_id=ORG, label="human", value="Name: Ada", description="The user.")
    return [persona.model_copy(update=overrides), human]


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from {path}"


def meta(**fields: object) -> MemoryMetadata:
    return MemoryMetadata(**{"now": NOW, "recall_count": 4, **fields})  # type: ignore[arg-type]


def test_standard_rendering() -> None:
    section = render_memory_section(blocks(), agent_type="letta_v1_agent", provider="openai")
    assert_golden("standard", compile_system_message(TEMPLATE, section, meta()))


def test_line_numbered_rendering_for_anthropic() -> None:
    section = render_memory_section(blocks(), agent_type="memgpt_v2_agent", provider="anthropic")
    assert_golden("line_numbered", compile_system_message(TEMPLATE, section, meta()))


@pytest.mark.parametrize(
    ("agent_type", "provider", "numbered"),
    [
        ("letta_v1_agent", "anthropic", True),
        ("sleeptime_agent", "anthropic", True),
        ("memgpt_v2_agent", "anthropic", True),
        ("memgpt_agent", "anthropic", False),
        ("letta_v1_agent", "openai", False),
        ("react_agent", "anthropic", False),
    ],
)
def test_line_numbers_only_for_anthropic_and_three_agent_types(
    agent_type: str, provider: str, numbered: bool
) -> None:
    assert uses_line_numbers(agent_type, provider) is numbered


def test_read_only_block_and_tool_usage_rules() -> None:
    section = render_memory_section(
        blocks(read_only=True),
        agent_type="letta_v1_agent",
        provider="openai",
        tool_rule_lines=["<tool_rule>\nsend_message ends your response.\n</tool_rule>"],
    )
    assert_golden("read_only_and_rules", compile_system_message(TEMPLATE, section, meta()))


def test_core_memory_placeholder_is_replaced_in_place() -> None:
    template = "Start.\n\n{CORE_MEMORY}\n\nEnd."
    section = render_memory_section(blocks(), agent_type="letta_v1_agent", provider="openai")
    text = compile_system_message(template, section, meta())
    assert text.startswith("Start.\n\n<memory_blocks>\n")
    assert text.endswith("</memory_metadata>\n\nEnd.")
    assert "{CORE_MEMORY}" not in text


def test_blockless_agent_types_omit_memory_blocks() -> None:
    section = render_memory_section(
        blocks(), agent_type="react_agent", provider="openai", tool_rule_lines=["rule"]
    )
    assert "<memory_blocks>" not in section and section.startswith("<tool_usage_rules>")


def test_hidden_blocks_are_not_rendered() -> None:
    section = render_memory_section(
        blocks(hidden=True), agent_type="letta_v1_agent", provider="openai"
    )
    assert "<persona>" not in section and "<human>" in section


def test_metadata_full_in_agent_timezone() -> None:
    text = render_memory_metadata(
        meta(
            timezone="America/Los_Angeles",
            last_modified=NOW,
            archival_count=7,
            archival_tags=["work", "family"],
        )
    )
    assert_golden("metadata_full", text)


def test_metadata_omits_archival_lines_when_empty_and_shows_utc() -> None:
    text = render_memory_metadata(meta())
    assert "archival memory" not in text and "tags" not in text
    assert "- Memory blocks were last modified: 2026-11-22 11:07:55 AM UTC+0000" in text
    assert "- The current system date is: November 22, 2026" in text


def test_letta_time_format() -> None:
    moment = datetime(2026, 1, 20, 22, 13, 45, tzinfo=UTC)
    assert letta_time(moment, "America/Los_Angeles") == "2026-01-20 02:13:45 PM PST-0800"


# The rebuild rule ---------------------------------------------------------------------------


def stored(section: str, **fields: object) -> str:
    return compile_system_message(TEMPLATE, section, meta(**fields))


def section_of(bs: list[Block], rules: tuple[str, ...] = (), directories: str | None = None) -> str:
    return render_memory_section(
        bs,
        agent_type="letta_v1_agent",
        provider="openai",
        tool_rule_lines=rules,
        directories=directories,
    )


def test_changed_counts_or_clock_do_not_trigger_a_rebuild() -> None:
    section = section_of(blocks())
    old = stored(section, recall_count=1, archival_count=0)
    later = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)
    assert not needs_rebuild(old, TEMPLATE, section)
    assert not needs_rebuild(
        stored(section, now=later, recall_count=99, archival_count=5, archival_tags=["x"]),
        TEMPLATE,
        section,
    )


def test_changed_block_triggers_a_rebuild() -> None:
    old = stored(section_of(blocks()))
    assert needs_rebuild(old, TEMPLATE, section_of(blocks(value="I am Sam.")))
    assert needs_rebuild(old, TEMPLATE, section_of(blocks(read_only=True)))
    assert needs_rebuild(old, TEMPLATE, section_of(blocks(limit=6000)))


def test_changed_rule_or_open_file_triggers_a_rebuild() -> None:
    old = stored(section_of(blocks()))
    assert needs_rebuild(old, TEMPLATE, section_of(blocks(), rules=("a rule",)))
    assert needs_rebuild(
        old, TEMPLATE, section_of(blocks(), directories="<directories>\n</directories>")
    )


def folder(*files: FileView) -> list[Directory]:
    return [
        Directory(
            name="handbook",
            description="Company handbook",
            instructions="Cite the section.",
            files=files,
        ),
        Directory(name="empty"),
    ]


OPEN = FileView(
    name="handbook/leave.md",
    visible_content="[Viewing lines 1 to 2]\n1: Leave\n2: ...",
    limit=200,
    description="Leave policy",
)
CLOSED = FileView(name="handbook/travel.md", limit=200)


def test_directories_with_file_limits_and_open_and_closed_files() -> None:
    directories = render_directories(folder(OPEN, CLOSED), max_files_open=5)
    section = section_of(
        blocks(),
        rules=("<tool_rule>send_message ends your turn</tool_rule>",),
        directories=directories,
    )
    assert_golden("directories", compile_system_message(TEMPLATE, section, meta()))


def test_no_folders_render_no_directories_and_open_count_follows_the_view() -> None:
    assert render_directories([], max_files_open=5) == ""
    text = render_directories(folder(CLOSED, FileView(name="b", limit=9)), max_files_open=3)
    assert "- current_files_open=0\n- max_files_open=3" in text
    assert "<value>" not in text and "<file_limits>" not in render_directories(
        folder(OPEN), max_files_open=None
    )


def test_view_over_the_limit_ends_with_a_truncation_note() -> None:
    assert view_window("short", 10) == "short"
    cut = view_window("x" * 100, 40)
    assert len(cut) <= 40 and cut.endswith("...[TRUNCATED]")


def test_opening_a_file_triggers_a_rebuild() -> None:
    closed = stored(
        section_of(blocks(), directories=render_directories(folder(CLOSED), max_files_open=5))
    )
    opened = render_directories(
        folder(FileView(name=CLOSED.name, limit=200, visible_content="now open")), max_files_open=5
    )
    assert needs_rebuild(closed, TEMPLATE, section_of(blocks(), directories=opened))


def test_changed_template_triggers_a_rebuild() -> None:
    section = section_of(blocks())
    assert needs_rebuild(stored(section), TEMPLATE + "\nBe brief.", section)


def test_block_quoting_the_metadata_tag_does_not_confuse_the_rule() -> None:
    tricky = blocks(value="<memory_metadata>\nnot real\n</memory_metadata>")
    section = section_of(tricky)
    assert not needs_rebuild(stored(section, recall_count=50), TEMPLATE, section)
    assert needs_rebuild(stored(section), TEMPLATE, section_of(blocks()))


@pytest.mark.parametrize(
    ("agent_type", "tool"),
    [
        ("memgpt_v2_agent", "send_message"),
        ("sleeptime_agent", "memory_finish_edits"),
        ("letta_v1_agent", "conversation_search"),
    ],
)
def test_base_prompts_name_their_tools_and_take_memory_after_them(
    agent_type: str, tool: str
) -> None:
    template = base_prompt(agent_type)
    assert tool in template and CORE_MEMORY_PLACEHOLDER not in template
    text = compile_system_message(template, section_of(blocks()), meta())
    assert text.startswith(template + "\n\n<memory_blocks>")
