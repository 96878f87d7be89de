"""Packaged messages exactly as Letta writes them (reference §3)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from cairn.memory import packaging

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
