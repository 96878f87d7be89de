"""Letta's packaged messages: JSON strings inside user and tool messages.

Serialised with two-space indentation and unescaped unicode, as a 0.16.1 server sends them.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from cairn.memory.render import letta_time

AUTOMATED_PREFIX = "[This is an automated system message hidden from the user] "
HEARTBEAT_REASON = (
    AUTOMATED_PREFIX + "Function called using request_heartbeat=true, returning control"
)
CONTINUE_RULE_REASON = AUTOMATED_PREFIX + "Continuing: continue tool rule."
# Wording is Cairn's own: the reference pins the mechanism, not this sentence.
NO_TOOL_CALL_REASON = (
    AUTOMATED_PREFIX + "No tool was called. You must call a tool to continue or end your turn."
)
FIRST_LOGIN = "Never (first login)"
SEND_MESSAGE_RESULT = "Sent message successfully."
SUMMARY_PREAMBLE = (
    "Note: prior messages have been hidden from view due to conversation memory constraints.\n"
    "The following is a summary of the previous messages:\n "
)


def _dumps(packet: dict[str, Any]) -> str:
    return json.dumps(packet, indent=2, ensure_ascii=False)


def user_message(
    text: str,
    *,
    now: datetime,
    timezone: str,
    name: str | None = None,
    location: str | None = None,
) -> str:
    packet: dict[str, Any] = {
        "type": "user_message",
        "message": text,
        "time": letta_time(now, timezone),
    }
    if location is not None:
        packet["location"] = location
    if name is not None:
        packet["name"] = name
    return _dumps(packet)


def tool_return(result: Any, *, success: bool, now: datetime, timezone: str) -> str:
    return _dumps(
        {
            "status": "OK" if success else "Failed",
            "message": result,
            "time": letta_time(now, timezone),
        }
    )


def heartbeat(*, now: datetime, timezone: str, reason: str = HEARTBEAT_REASON) -> str:
    return _dumps({"type": "heartbeat", "reason": reason, "time": letta_time(now, timezone)})


def login(*, now: datetime, timezone: str, last_login: str = FIRST_LOGIN) -> str:
    return _dumps({"type": "login", "last_login": last_login, "time": letta_time(now, timezone)})


def system_alert(message: str, *, now: datetime, timezone: str) -> str:
    return _dumps({"type": "system_alert", "message": message, "time": letta_time(now, timezone)})


def summary(summary_text: str, *, now: datetime, timezone: str) -> str:
    """The message that stands in for evicted history, placed right after the system message."""
    return system_alert(SUMMARY_PREAMBLE + summary_text, now=now, timezone=timezone)
