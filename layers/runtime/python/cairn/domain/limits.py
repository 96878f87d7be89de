"""What a spent budget or a busy key is told (docs/operations.md, "Budgets and limits")."""

from __future__ import annotations

from datetime import UTC, datetime

from cairn.errors import LimitExceededError

NAMES = {
    "monthly_tokens": "monthly token budget",
    "monthly_cost_usd": "monthly cost budget",
    "requests_per_minute": "limit of requests per minute for this API key",
}


def next_month(now: datetime) -> datetime:
    first = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (
        first.replace(year=first.year + 1, month=1)
        if first.month == 12
        else first.replace(month=first.month + 1)
    )


def budget_spent(org_id: str, kind: str, now: datetime | None = None) -> LimitExceededError:
    """The organization spent its monthly `kind` budget: nothing more runs until next month."""
    now = now or datetime.now(UTC)
    resumes = next_month(now)
    return LimitExceededError(
        f"The organization's {NAMES[kind]} ({kind}) is spent: runs resume on "
        f"{resumes.date().isoformat()} (UTC), or when the operator raises it",
        int((resumes - now).total_seconds()) + 1,
        limit=kind,
        organization_id=org_id,
    )


def too_many_requests(org_id: str, limit: int, retry_after_seconds: int) -> LimitExceededError:
    return LimitExceededError(
        f"Rate limit exceeded: the {NAMES['requests_per_minute']} "
        f"(requests_per_minute: {limit}); try again in {retry_after_seconds} s",
        retry_after_seconds,
        limit="requests_per_minute",
        organization_id=org_id,
    )
