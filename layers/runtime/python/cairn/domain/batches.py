"""Message batches: many agents sent a message each in one request (Letta's BatchJob)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.ids import OrgId, new_id

BatchStatus = Literal["running", "completed", "cancelled"]


class Batch(DomainModel):
    id: str = Field(default_factory=lambda: new_id("job"))
    organization_id: OrgId
    created_by_id: str | None = None
    callback_url: str | None = None
    run_ids: list[str] = Field(default_factory=list)  # in the order of the requests
    # Read back, not written: cancelled, else running until every run has ended.
    status: BatchStatus = "running"
    cancelled_at: datetime | None = None
    completed_at: datetime | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
