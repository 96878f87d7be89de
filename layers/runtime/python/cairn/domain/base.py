"""Shared pieces of the domain models."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict


def utc_now() -> datetime:
    return datetime.now(UTC)


# A model's validator is built on its first use, not when its module is imported: a cold
# start pays only for the models its request touches (docs/numbers.md, packaging).
DEFERRED = ConfigDict(defer_build=True)


class Value(BaseModel):
    """A value inside a row, a request or a response (content, a tool call, usage)."""

    model_config = DEFERRED


class DomainModel(BaseModel):
    """A row of Cairn's state. Validation here matches the database's constraints."""

    model_config = ConfigDict(validate_assignment=True, extra="ignore", defer_build=True)
