"""Cairn's own built-in for an agent to message itself later (a follow-up tomorrow, a daily
check-in): the message comes back as a user message of a run of its own."""

from __future__ import annotations

from cairn.tools.context import ToolContext


def schedule_message(
    ctx: ToolContext,
    message: str,
    run_at: str | None = None,
    cron: str | None = None,
    timezone: str | None = None,
) -> str:
    """Schedule a message to yourself: it arrives as a user message at that time, starting a turn of its own.

    Args:
        message: What you will be told then (write it as a note to your future self).
        run_at: When, once: an ISO date and time (in `timezone` if it has no offset).
        cron: When, again and again: a five-field cron expression (minute hour day month weekday).
        timezone: The IANA timezone of `run_at` or `cron`; yours when omitted.
    """  # noqa: E501 (one line each, as the model reads them)
    return ctx.schedule_message(message, run_at=run_at, cron=cron, timezone=timezone)
