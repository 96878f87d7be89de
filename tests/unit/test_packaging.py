"""Packaged messages exactly as Letta writes them (reference §3)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from cairn.domain import Agent, LLMConfig
from cairn.domain.ids import new_id
from cairn.memory import packaging
from cairn.memory.initial import initial_messages

NOW = datetime(2026, 1, 20, 22, 13, 45, tzinfo=UTC)
LA = "America/Los_Angeles"


def test_user_message_with_optional_fields() -> None:
    text = packaging.user_message("héllo", now=NOW, timezone=LA, name="ada")
    assert text == (
        '{\n  "type": "user_message",\n  "message": "héllo",\n'
        '  "time": "2026-01-20 02:13:45 PM PST-0800",\n  "name": "ada"\n}'
    )


def test_tool_return_ok_and_failed() -> None:
    ok = json.loads(
        packaging.tool_return("Sent message successfully.", success=True, now=NOW, timezone="UTC")
    )
    failed = json.loads(
        packaging.tool_return({"error": "x"}, success=False, now=NOW, timezone="UTC")
    )
    assert ok == {
        "status": "OK",
        "message": "Sent message successfully.",
        "time": "2026-01-20 10:13:45 PM UTC+0000",
    }
    assert failed["status"] == "Failed" and failed["message"] == {"error": "x"}


def test_heartbeat_login_and_continue_reason() -> None:
    beat = json.loads(packaging.heartbeat(now=NOW, timezone=LA))
    assert beat["type"] == "heartbeat"
    assert beat["reason"] == (
        "[This is an automated system message hidden from the user] "
        "Function called using request_heartbeat=true, returning control"
    )
    cont = json.loads(
        packaging.heartbeat(now=NOW, timezone=LA, reason=packaging.CONTINUE_RULE_REASON)
    )
    assert cont["reason"].endswith("Continuing: continue tool rule.")
    assert json.loads(packaging.login(now=NOW, timezone=LA)) == {
        "type": "login",
        "last_login": "Never (first login)",
        "time": "2026-01-20 02:13:45 PM PST-0800",
    }


def test_summary_is_a_system_alert_with_letta_preamble() -> None:
    packet = json.loads(packaging.summary("We talked about tea.", now=NOW, timezone="UTC"))
    assert packet["type"] == "system_alert"
    assert packet["message"] == (
        "Note: prior messages have been hidden from view due to conversation memory constraints.\n"
        "The following is a summary of the previous messages:\n We talked about tea."
    )


@pytest.mark.parametrize(
    ("agent_type", "roles"),
    [
        ("letta_v1_agent", ["system"]),
        ("memgpt_v2_agent", ["system", "assistant", "tool", "user"]),
        ("memgpt_agent", ["system", "assistant", "tool", "user"]),
        ("sleeptime_agent", ["system", "user"]),
    ],
)
def test_initial_sequence_per_agent_type(agent_type: str, roles: list[str]) -> None:
    agent = Agent(
        organization_id=new_id("org"),
        name="a",
        agent_type=agent_type,  # type: ignore[arg-type]
        llm_config=LLMConfig(model="m", model_endpoint_type="openai", context_window=8000),
        timezone=LA,
    )
    messages = initial_messages(agent, "SYSTEM", now=NOW)
    assert [m.role for m in messages] == roles
    assert messages[0].text == "SYSTEM"
    assert all(m.agent_id == agent.id and m.created_at == NOW for m in messages)
    if "tool" in roles:
        call, ret = messages[1].tool_calls[0], messages[2]  # type: ignore[index]
        assert call.function.name == "send_message" and len(call.id) <= 29
        assert ret.tool_call_id == call.id and ret.tool_returns[0].status == "success"  # type: ignore[index]
        assert json.loads(ret.text)["message"] == "Sent message successfully."
    if roles[-1] == "user":
        login = json.loads(messages[-1].text)
        assert login == {
            "type": "login",
            "last_login": "Never (first login)",
            "time": "2026-01-20 02:13:45 PM PST-0800",
        }
