"""Shared pieces of the domain models."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict


def utc_now() -> datetime:
    return datetime.now(UTC)


class DomainModel(BaseModel):
    """A row of Cairn's state. Validation here matches the database's constraints."""

    model_config = ConfigDict(validate_assignment=True, extra="ignore", defer_build=True)
