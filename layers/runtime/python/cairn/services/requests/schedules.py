"""A message scheduled to an agent."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from cairn.services.requests.base import RequestBody
from cairn.services.requests.messages import MessageCreate


class ScheduleCreate(RequestBody):
    """What to send (`input`, or user `messages`) and when: `run_at` once, or `cron` (five
    fields) in `timezone`."""

    input: str | None = Field(default=None, max_length=100_000)
    messages: list[MessageCreate] | None = None
    run_at: datetime | None = None
    cron: str | None = Field(default=None, max_length=200)
    timezone: str = "UTC"

    @property
    def text(self) -> str:
        if self.input is not None:
            return self.input
        return "\n".join(m.text for m in self.messages or ())
