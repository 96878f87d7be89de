"""Domain models: ids, validation and the small rules that live with the data."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cairn.config import Settings
from cairn.domain import Agent, Message, TextContent, ToolCall
from cairn.domain.ids import is_id, new_id
from cairn.domain.messages import FunctionCall
from cairn.domain.runs import run_status_for
from cairn.domain.tool_rules import ChildToolRule, InitToolRule, tool_rules_adapter

ORG = new_id("org")


@pytest.mark.parametrize("prefix", ["agent", "block", "tool", "message", "run", "step", "passage"])
def test_ids_are_prefixed_uuid4(prefix: str) -> None:
    value = new_id(prefix)
    assert is_id(value, prefix)
    assert value[len(prefix) + 15] == "4"  # the uuid version nibble
    assert not is_id(value.upper(), prefix)


def test_unknown_id_prefix_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown id prefix"):
        new_id("banana")


def test_model_rejects_an_id_of_another_kind() -> None:
    with pytest.raises(ValidationError):
        Agent(id=new_id("block"), organization_id=ORG, name="a", llm_config={"model": "m"})


def test_agent_timezone_must_be_iana() -> None:
    agent = Agent(organization_id=ORG, name="a", llm_config={"model": "m"}, timezone="Asia/Tokyo")
    assert agent.timezone == "Asia/Tokyo"
    with pytest.raises(ValidationError, match="unknown timezone 'Mars/Base'"):
        Agent(organization_id=ORG, name="a", llm_config={"model": "m"}, timezone="Mars/Base")


def test_context_window_has_letta_minimum() -> None:
    with pytest.raises(ValidationError):
        Agent(organization_id=ORG, name="a", llm_config={"model": "m", "context_window": 1000})


def test_tool_rules_parse_by_type_and_reject_unknown_types() -> None:
    rules = tool_rules_adapter.validate_python(
        [
            {"type": "run_first", "tool_name": "a", "args": {"x": 1}},
            {"type": "constrain_child_tools", "tool_name": "a", "children": ["b"]},
        ]
    )
    assert isinstance(rules[0], InitToolRule) and rules[0].args == {"x": 1}
    assert isinstance(rules[1], ChildToolRule) and rules[1].children == ["b"]
    with pytest.raises(ValidationError):
        tool_rules_adapter.validate_python([{"type": "sometimes", "tool_name": "a"}])
    with pytest.raises(ValidationError):
        tool_rules_adapter.validate_python(
            [{"type": "max_count_per_step", "tool_name": "a", "max_count_limit": 0}]
        )


def test_tool_call_ids_we_make_fit_letta_and_provider_ids_are_kept() -> None:
    from cairn.memory.initial import tool_call_id

    assert len(tool_call_id()) == 29
    # Anthropic's ids run to 30 characters; they must round-trip unchanged
    ToolCall(id="toolu_01" + "x" * 22, function=FunctionCall(name="f", arguments="{}"))
    with pytest.raises(ValidationError):
        ToolCall(id="c" * 129, function=FunctionCall(name="f", arguments="{}"))


@pytest.mark.parametrize(
    ("stop_reason", "status"),
    [
        ("end_turn", "completed"),
        ("requires_approval", "completed"),
        ("max_steps", "completed"),
        ("tool_rule", "completed"),
        ("cancelled", "cancelled"),
        ("error", "failed"),
        ("invalid_tool_call", "failed"),
        ("llm_api_error", "failed"),
    ],
)
def test_run_status_follows_letta_mapping(stop_reason: str, status: str) -> None:
    assert run_status_for(stop_reason) == status  # type: ignore[arg-type]


def test_search_text_reads_text_and_send_message_argument() -> None:
    agent_id = new_id("agent")
    user = Message(
        organization_id=ORG,
        agent_id=agent_id,
        role="user",
        content=[TextContent(text="where is my cat")],
    )
    reply = Message(
        organization_id=ORG,
        agent_id=agent_id,
        role="assistant",
        tool_calls=[
            ToolCall(
                id="call_1",
                function=FunctionCall(name="send_message", arguments='{"message": "on the sofa"}'),
            )
        ],
    )
    broken = Message(
        organization_id=ORG,
        agent_id=agent_id,
        role="assistant",
        tool_calls=[
            ToolCall(id="call_2", function=FunctionCall(name="send_message", arguments="not json"))
        ],
    )
    assert user.search_text() == "where is my cat"
    assert reply.search_text() == "on the sofa"
    assert broken.search_text() == ""


def test_settings_from_environment() -> None:
    settings = Settings.from_env({"CAIRN_PORT": "9000", "DATABASE_URL": "postgresql://x/y"})
    assert settings.port == 9000 and settings.database_url == "postgresql://x/y"
    with pytest.raises(ValidationError):
        Settings.from_env({"CAIRN_PORT": "not-a-port"})
