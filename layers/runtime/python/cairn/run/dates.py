"""Dates as a tool or a request names them: a day or an ISO datetime, in the agent's zone."""

from __future__ import annotations

from datetime import date, datetime, time
from zoneinfo import ZoneInfo

from cairn.memory.edits import MemoryEditError


def parse_when(value: str | None, timezone: str, *, end: bool = False) -> datetime | None:
    """`YYYY-MM-DD` or an ISO datetime; naive ones are in the agent's timezone."""
    if not value:
        return None
    tz = ZoneInfo(timezone)
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime.combine(day, time.max if end else time.min, tzinfo=tz)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise MemoryEditError(
            f"`{value}` is not a date: use YYYY-MM-DD or an ISO datetime."
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=tz)
