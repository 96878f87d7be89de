"""Cairn's error hierarchy, mapped once to HTTP statuses and Letta's error bodies."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


class CairnError(Exception):
    status_code = 500


class InvalidArgumentError(CairnError):
    status_code = 400


class NotFoundError(CairnError):
    status_code = 404


class ConflictError(CairnError):
    status_code = 409


class VersionConflictError(ConflictError):
    """An optimistic write named a version that is no longer current: reload and retry."""


class UnauthorizedError(CairnError):
    status_code = 401


class UnavailableError(CairnError):
    """Something the request needs cannot be reached now (the database resuming from a
    pause, or failing over): try again shortly (503, Retry-After)."""

    status_code = 503
    retry_after_seconds = 5


class UnprocessableError(CairnError):
    """A request that parsed but cannot be acted on as sent (Letta answers 422)."""

    status_code = 422


class PendingApprovalError(ConflictError):
    """A new message while a tool call waits for approval (Letta's PENDING_APPROVAL body)."""

    def __init__(self, pending_request_id: str) -> None:
        super().__init__(
            "CONFLICT: Cannot send a new message: The agent is waiting for approval on a tool "
            "call. Please approve or deny the pending request before continuing."
        )
        self.pending_request_id = pending_request_id

    def detail(self) -> dict[str, str]:
        return {
            "code": "PENDING_APPROVAL",
            "message": str(self),
            "pending_request_id": self.pending_request_id,
        }


class UnsupportedMediaError(CairnError):
    """An upload of a kind of file Cairn does not read (Letta answers 415)."""

    status_code = 415


class TooLargeError(CairnError):
    """Over a size limit the message names."""

    status_code = 413


class LimitExceededError(CairnError):
    """Past one of the organization's limits (docs/operations.md, "Budgets and limits"):
    429, with Retry-After saying when the limit's window ends."""

    status_code = 429

    def __init__(
        self, message: str, retry_after_seconds: int, *, limit: str, organization_id: str
    ) -> None:
        super().__init__(message)
        self.retry_after_seconds = max(1, retry_after_seconds)
        self.limit, self.organization_id = limit, organization_id  # for the operator's metrics


def found(value: T | None, kind: str, ident: str | None = None) -> T:
    """`value`, or the 404 Letta answers for a `kind` of that id that is not there (or is
    another organization's: the same answer, so an id reveals nothing). Without `ident`,
    `kind` is the whole answer, where Letta words a resource's 404 its own way."""
    if value is None:
        raise not_found(kind, ident)
    return value


def not_found(kind: str, ident: str | None = None) -> NotFoundError:
    """The 404 of `found()`, for what is not a fetch: a deletion that found nothing, ids of
    a list that are not there."""
    return NotFoundError(kind if ident is None else f"{kind} with id '{ident}' not found")


def noted(err: BaseException, attribute: str) -> str | None:
    """The note `attribute` left on `err` or on an error it wraps: the SDKs wrap a
    transport's error once or twice and keep only their own message."""
    seen: BaseException | None = err
    for _ in range(8):
        if seen is None:
            return None
        if (note := getattr(seen, attribute, None)) is not None:
            return str(note)
        seen = seen.__cause__ or seen.__context__
    return None
