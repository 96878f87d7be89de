"""What every request body is: Letta's fields, unknown ones ignored; or strict."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class RequestBody(BaseModel):
    model_config = ConfigDict(extra="ignore", protected_namespaces=(), defer_build=True)


class StrictBody(BaseModel):
    # Letta's provider bodies admit no other keys (additionalProperties false).
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), defer_build=True)
