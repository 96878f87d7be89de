"""Built-in tools: schemas from signatures and docstrings, runtime arguments, tool sets."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from cairn.domain import Block
from cairn.domain.ids import new_id
from cairn.domain.tool_rules import ContinueToolRule, TerminalToolRule
from cairn.memory.edits import CoreMemory, MemoryEditError
from cairn.tools.registry import (
    BUILTIN_TOOLS,
    default_tool_names,
    default_tool_rules,
    tool_spec,
)
from cairn.tools.schema import (
    REQUEST_HEARTBEAT,
    THINKING,
    ToolArgumentError,
    function_schema,
    split_runtime_arguments,
    with_runtime_arguments,
)

ORG = new_id("org")


class Context:
    """A ToolContext with real core memory; searches are not needed by these tests."""

    def __init__(self) -> None:
        self.memory = CoreMemory.of(ORG, [Block(organization_id=ORG, label="human", value="Ada")])


def ranked(ctx: Any, query: str, mode: Literal["fast", "exact"] = "fast", top: int = 3) -> str:
    """Rank things.

    Ranks more things.

    Args:
        query: What to rank.
        mode: How to rank.
        top: How many to keep.
    """
    return f"{query}:{mode}:{top}"


def test_schema_comes_from_signature_and_docstring() -> None:
    assert function_schema(ranked) == {
        "name": "ranked",
        "description": "Rank things.\n\nRanks more things.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to rank."},
                "mode": {
                    "type": "string",
                    "enum": ["fast", "exact"],
                    "description": "How to rank.",
                },
                "top": {"type": "integer", "description": "How many to keep."},
            },
            "required": ["query"],
        },
    }


def test_undocumented_parameter_or_long_name_is_refused_at_registration() -> None:
    def undocumented(ctx: Any, x: int) -> None:
        """Does a thing."""

    with pytest.raises(TypeError, match="`x` has no description"):
        tool_spec(undocumented, "custom")

    def a_tool_whose_name_is_much_longer_than_forty_eight_chars(ctx: Any) -> None:
        """Too long."""

    with pytest.raises(TypeError, match="over 48 characters"):
        function_schema(a_tool_whose_name_is_much_longer_than_forty_eight_chars)


def test_arguments_are_validated_by_the_same_model() -> None:
    spec = tool_spec(ranked, "custom")
    assert spec.call(None, {"query": "q", "top": "5"}) == "q:fast:5"  # type: ignore[arg-type]
    with pytest.raises(ToolArgumentError, match="`mode`") as err:
        spec.call(None, {"query": "q", "mode": "slow"})  # type: ignore[arg-type]
    assert "Invalid arguments to `ranked`" in str(err.value)
    with pytest.raises(ToolArgumentError, match="`query`: Field required"):
        spec.call(None, {})  # type: ignore[arg-type]
    with pytest.raises(ToolArgumentError, match="`extra`"):
        spec.call(None, {"query": "q", "extra": 1})  # type: ignore[arg-type]


def test_every_builtin_has_a_complete_schema_and_settings() -> None:
    for name, spec in BUILTIN_TOOLS.items():
        schema = spec.json_schema
        assert schema["name"] == name and schema["description"]
        for prop in schema["parameters"]["properties"].values():
            assert prop.get("description") and "title" not in prop
        assert spec.return_char_limit == 50_000
    assert BUILTIN_TOOLS["conversation_search"].enable_parallel_execution
    assert not BUILTIN_TOOLS["core_memory_append"].enable_parallel_execution
    tool = BUILTIN_TOOLS["memory_insert"].as_tool(ORG)
    assert tool.tool_type == "letta_sleeptime_core" and tool.json_schema["name"] == "memory_insert"


def test_runtime_arguments_thinking_first_heartbeat_last() -> None:
    schema = BUILTIN_TOOLS["core_memory_append"].json_schema
    full = with_runtime_arguments(schema, request_heartbeat=True, thinking=True)
    params = full["parameters"]
    assert list(params["properties"]) == [THINKING, "label", "content", REQUEST_HEARTBEAT]
    assert params["required"] == [THINKING, "label", "content", REQUEST_HEARTBEAT]
    assert params["properties"][REQUEST_HEARTBEAT]["type"] == "boolean"
    # terminal tools get no heartbeat; the stored schema is left untouched
    bare = with_runtime_arguments(schema, request_heartbeat=False, thinking=False)
    assert bare == schema and REQUEST_HEARTBEAT not in schema["parameters"]["properties"]


def test_runtime_arguments_are_stripped_before_execution() -> None:
    own, heartbeat, thinking = split_runtime_arguments(
        {"label": "human", "content": "x", THINKING: "note it", REQUEST_HEARTBEAT: "true"}
    )
    assert own == {"label": "human", "content": "x"}
    assert heartbeat is True and thinking == "note it"
    assert split_runtime_arguments({"a": 1}) == ({"a": 1}, None, None)


def test_memory_tool_call_edits_core_memory() -> None:
    ctx = Context()
    reply = BUILTIN_TOOLS["core_memory_append"].call(ctx, {"label": "human", "content": "Paris"})
    assert "has been edited" in reply and ctx.memory.blocks["human"].value == "Ada\nParis"
    BUILTIN_TOOLS["memory"].call(
        ctx, {"command": "create", "path": "/memories/notes", "file_text": "n"}
    )
    BUILTIN_TOOLS["memory"].call(
        ctx, {"command": "rename", "path": "/memories/notes", "description": "Notes"}
    )
    assert ctx.memory.blocks["notes"].description == "Notes"
    with pytest.raises(MemoryEditError, match="needs the `old_path`"):
        BUILTIN_TOOLS["memory"].call(ctx, {"command": "rename", "new_path": "/memories/x"})


@pytest.mark.parametrize(
    ("agent_type", "sleeptime", "expected"),
    [
        (
            "memgpt_agent",
            False,
            {
                "send_message",
                "conversation_search",
                "archival_memory_insert",
                "archival_memory_search",
                "core_memory_append",
                "core_memory_replace",
                "memory",
            },
        ),
        (
            "memgpt_v2_agent",
            True,
            {"send_message", "conversation_search", "archival_memory_search"},
        ),
        # What a 0.16.1 server attaches (fixtures A, B, C): reference §5.
        ("letta_v1_agent", False, {"conversation_search", "memory_insert", "memory_replace"}),
        (
            "memgpt_v2_agent",
            False,
            {"send_message", "conversation_search", "memory_insert", "memory_replace"},
        ),
        ("letta_v1_agent", True, {"send_message", "conversation_search", "archival_memory_search"}),
        (
            "sleeptime_agent",
            False,
            {"memory_replace", "memory_insert", "memory_rethink", "memory_finish_edits"},
        ),
        ("react_agent", False, set()),
    ],
)
def test_tool_sets_per_agent_type(agent_type: str, sleeptime: bool, expected: set[str]) -> None:
    names = default_tool_names(agent_type, enable_sleeptime=sleeptime)
    assert set(names) == expected and all(n in BUILTIN_TOOLS for n in names)


def test_default_rules_end_on_terminal_tools_and_continue_on_the_rest() -> None:
    rules = default_tool_rules(["send_message", "conversation_search", "memory_finish_edits", "x"])
    assert rules == [
        TerminalToolRule(tool_name="send_message"),
        ContinueToolRule(tool_name="conversation_search"),
        TerminalToolRule(tool_name="memory_finish_edits"),
    ]


# The built-ins this issue brought over, as Letta 0.16.1's own tool listing shows them
# (tests/fixtures/letta-0.16.1/tools.json is its GET /v1/tools/ answer).
LETTA_SHAPED = (
    "fetch_webpage",
    "web_search",
    "run_code",
    "run_code_with_tools",
    "memory_apply_patch",
    "send_message_to_agent_async",
    "send_message_to_agent_and_wait_for_reply",
    "send_message_to_agents_matching_tags",
    "rethink_user_memory",
    "finish_rethinking_memory",
    "store_memories",
    "search_memory",
    "open_files",
    "grep_files",
    "semantic_search_files",
)


@pytest.mark.parametrize("name", LETTA_SHAPED)
def test_a_builtin_has_letta_s_schema_and_type(name: str) -> None:
    import json
    from pathlib import Path

    listed = json.loads(
        (Path(__file__).parents[1] / "fixtures/letta-0.16.1/tools.json").read_text()
    )
    letta = next(t for t in listed if t["name"] == name)
    assert BUILTIN_TOOLS[name].json_schema == letta["json_schema"]
    assert BUILTIN_TOOLS[name].tool_type == letta["tool_type"]


def test_a_schema_with_nested_objects_has_no_dangling_refs() -> None:
    """store_memories takes a list of objects: pydantic writes it as a `$ref` into `$defs`,
    which a provider cannot resolve once only the properties are sent."""
    items = BUILTIN_TOOLS["store_memories"].json_schema["parameters"]["properties"]["chunks"]
    assert "$ref" not in json_text(items) and items["items"]["required"] == [
        "start_index",
        "end_index",
        "context",
    ]


def json_text(value: Any) -> str:
    import json

    return json.dumps(value)
