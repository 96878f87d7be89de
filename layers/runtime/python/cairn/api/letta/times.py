"""Dates as Letta sends them."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def message_date(moment: datetime) -> str:
    # LettaMessage dates are whole seconds with an offset.
    return moment.astimezone(UTC).replace(microsecond=0).isoformat()
