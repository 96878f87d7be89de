"""Tool creation details Letta's own tests use, through letta-client 1.5.0 unchanged: a
schema from `args_schema` (a pydantic model, nested models under `$defs`), a rename by
`json_schema`, and an agent's repeated tool rules kept once."""

from __future__ import annotations

from typing import Any

import pytest
from letta_client import APIStatusError
from pydantic import BaseModel, Field

from tests.api.conftest import Stack

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


class InventoryItem(BaseModel):
    sku: str = Field(..., description="The item's stock-keeping unit.")
    price: float = Field(..., description="Its price in dollars.")
    note: str | None = Field(None, description="Anything else.")


class InventoryEntry(BaseModel):
    item: InventoryItem = Field(..., description="The item moved.")
    tags: list[str] = Field(..., description="Labels for the entry.")


class InventoryChange(BaseModel):
    data: InventoryEntry = Field(..., description="The entry to record.")
    quantity_change: int = Field(..., description="By how much the stock moves.")
    warehouse: str | None = Field(None, description="Where, if not the main one.")


def manage_inventory(data: InventoryEntry, quantity_change: int, warehouse: str = "") -> bool:
    return True  # no docstring: with an args schema none is needed


def initial_tool(x: int) -> int:
    """
    Multiply a number by 2

    Args:
        x: The input number

    Returns:
        The input multiplied by 2
    """
    return x * 2


RENAMED = '''
def renamed_function(value: float, multiplier: float = 2.0) -> float:
    """
    Multiply a value by a multiplier

    Args:
        value: The input value
        multiplier: The multiplier to use (default 2.0)
    """
    return value * multiplier
'''


def test_a_tool_made_from_an_args_schema_takes_its_parameters_from_it(stack: Stack) -> None:
    client = stack.client()
    tool = client.tools.upsert_from_function(func=manage_inventory, args_schema=InventoryChange)
    schema: dict[str, Any] = tool.json_schema or {}
    assert tool.name == "manage_inventory" and schema["name"] == "manage_inventory"
    assert schema["description"] == "The manage_inventory tool"
    params = schema["parameters"]
    assert params["required"] == ["data", "quantity_change"]
    assert params["properties"]["quantity_change"] == {
        "type": "integer",
        "description": "By how much the stock moves.",
    }
    assert params["properties"]["warehouse"] == {
        "type": "string",
        "description": "Where, if not the main one.",
    }
    data = params["properties"]["data"]
    # The nested models are written out where their $ref was.
    assert data["type"] == "object" and data["description"] == "The entry to record."
    assert data["required"] == ["item", "tags"]
    tags = data["properties"]["tags"]
    assert tags == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Labels for the entry.",
    }
    item = data["properties"]["item"]
    assert item["required"] == ["sku", "price"]
    assert item["properties"]["price"] == {"type": "number", "description": "Its price in dollars."}
    assert item["properties"]["note"] == {"type": "string", "description": "Anything else."}
    assert tool.args_json_schema == InventoryChange.model_json_schema()
    # Changing only the args schema writes the schema again from it.
    again = client.tools.update(
        tool.id, args_json_schema={"properties": {"n": {"type": "integer"}}, "required": ["n"]}
    )
    assert again.json_schema == {
        "name": "manage_inventory",
        "description": "The manage_inventory tool",
        "parameters": {
            "type": "object",
            "properties": {"n": {"type": "integer", "description": ""}},
            "required": ["n"],
        },
    }


@pytest.mark.parametrize(
    ("args_schema", "named"),
    [
        ({"properties": {"x": {"$ref": "#/$defs/Nope"}}}, "names nothing under `$defs`"),
        ({"properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}, "union"),
        (
            {
                "properties": {"x": {"$ref": "#/$defs/L"}},
                "$defs": {"L": {"properties": {"next": {"$ref": "#/$defs/L"}}}},
            },
            "contains itself",
        ),
        ({"properties": "x"}, "needs `properties`"),
    ],
)
def test_an_args_schema_it_cannot_use_is_a_400_naming_the_field(
    stack: Stack, args_schema: dict[str, Any], named: str
) -> None:
    with pytest.raises(APIStatusError) as refused:
        stack.client().tools.create(source_code=RENAMED, args_json_schema=args_schema)
    assert refused.value.status_code == 400 and named in str(refused.value.body)


def test_a_json_schema_alone_renames_a_tool_but_not_against_new_source(stack: Stack) -> None:
    """Letta's test_tool_rename_with_json_schema_and_source_code, as it runs there."""
    client = stack.client()
    tool = client.tools.upsert_from_function(func=initial_tool)
    assert tool.name == "initial_tool"
    custom: dict[str, Any] = {
        "name": "custom_schema_name",
        "description": "Custom description from JSON schema",
        "parameters": {
            "type": "object",
            "properties": {
                "value": {"type": "number", "description": "Input value from JSON schema"},
                "multiplier": {"type": "number", "description": "Multiplier", "default": 2.0},
            },
            "required": ["value"],
        },
    }
    with pytest.raises(APIStatusError) as mismatch:
        client.tools.update(tool.id, source_code=RENAMED, json_schema=custom)
    assert mismatch.value.status_code == 400
    custom["name"] = "renamed_function"
    renamed = client.tools.update(tool.id, json_schema=custom)
    assert renamed.name == "renamed_function" and renamed.json_schema == custom
    assert client.tools.retrieve(tool.id).name == "renamed_function"
    with pytest.raises(APIStatusError) as both:
        client.tools.update(tool.id, json_schema=custom, args_json_schema={"properties": {}})
    assert both.value.status_code == 400


def test_an_agents_repeated_tool_rules_are_kept_once(stack: Stack) -> None:
    client = stack.client()
    rules: list[dict[str, Any]] = [
        {"type": "exit_loop", "tool_name": "send_message"},
        {"type": "exit_loop", "tool_name": "send_message", "prompt_template": "another"},
        {"type": "max_count_per_step", "tool_name": "archival_memory_search", "max_count_limit": 2},
        {"type": "max_count_per_step", "tool_name": "archival_memory_search", "max_count_limit": 3},
        {
            "type": "constrain_child_tools",
            "tool_name": "conversation_search",
            "children": ["send_message", "archival_memory_search"],
        },
        {
            "type": "constrain_child_tools",
            "tool_name": "conversation_search",
            "children": ["archival_memory_search", "send_message"],
        },
    ]
    agent = client.agents.create(llm_config=LLM, tool_rules=rules)  # type: ignore[arg-type]
    kept = [
        (r.type, r.tool_name, getattr(r, "max_count_limit", None)) for r in agent.tool_rules or []
    ]
    assert kept == [
        ("exit_loop", "send_message", None),
        ("max_count_per_step", "archival_memory_search", 2),
        ("max_count_per_step", "archival_memory_search", 3),
        ("constrain_child_tools", "conversation_search", None),
    ]
    assert agent.tool_rules and getattr(agent.tool_rules[0], "prompt_template", None) is None
    changed = client.agents.update(agent.id, tool_rules=rules[:2] * 3)  # type: ignore[arg-type]
    assert [(r.type, r.tool_name) for r in changed.tool_rules or []] == [
        ("exit_loop", "send_message")
    ]
    stored = client.agents.retrieve(agent.id)
    assert len(stored.tool_rules or []) == 1
