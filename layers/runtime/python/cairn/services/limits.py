"""An organization's budgets and limits, set by the operator (`cairn-admin limits`) and read
with its usage (docs/operations.md, "Budgets and limits")."""

from __future__ import annotations

from typing import Any

from cairn.domain.limits import budget_spent
from cairn.errors import InvalidArgumentError, found
from cairn.store import limits
from cairn.store.db import Database

KINDS = limits.KINDS
WHOLE = ("monthly_tokens", "requests_per_minute", "max_runs")


def show(db: Database, org_id: str) -> dict[str, Any]:
    """The organization's limits (None: none of that kind) and what it used this month."""
    with db.connection() as conn:
        kept = found(limits.get(conn, org_id), f"Organization {org_id} not found")
    return _shown(kept)


def ensure_budget(db: Database, org_id: str) -> None:
    """Raise the 429 of a spent monthly budget (for a model call made outside a run; runs
    are checked where they start, in the same statement)."""
    with db.connection() as conn:
        spent = limits.spent(conn, org_id)
    if spent is not None:
        raise budget_spent(org_id, spent)


def spend(
    db: Database, org_id: str, model: str, prompt: int, completion: int, cost_usd: float
) -> None:
    """A model call made outside a step (a tool generated) added to the month's total the
    budgets read and to the day's usage rows; a step's are added by its checkpoint."""
    with db.transaction() as conn:
        limits.add_call(conn, org_id, model, prompt, completion, cost_usd)


def change(db: Database, org_id: str, asked: dict[str, Any], *, share: int) -> dict[str, Any]:
    """Set the limits named in `asked` (0 or None: no limit of that kind; others unchanged).
    `share`: CAIRN_ORG_MAX_RUNS, which an organization's own `max_runs` replaces; with the
    share off (0) no organization's runs are counted, so `max_runs` is refused."""
    wanted = {k: _valid(k, v) for k, v in asked.items() if k in limits.KINDS}
    if wanted.get("max_runs") and share <= 0:
        raise InvalidArgumentError(
            "max_runs: the organizations' share of the workers is off (CAIRN_ORG_MAX_RUNS=0), "
            "so no organization's runs are counted; set CAIRN_ORG_MAX_RUNS first"
        )
    with db.transaction() as conn:
        kept = found(limits.get(conn, org_id), f"Organization {org_id} not found")
        limits.put(conn, org_id, {**{k: kept[k] for k in limits.KINDS}, **wanted})
        return _shown(limits.get(conn, org_id) or kept)


def _valid(kind: str, value: Any) -> int | float | None:
    if value is None or value == 0:
        return None
    if kind in WHOLE:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidArgumentError(f"{kind}: a whole number, at least 1 (0: no limit)")
        if value > 2**31 - 1 and kind != "monthly_tokens":
            raise InvalidArgumentError(f"{kind}: at most {2**31 - 1}")
        if value > 2**63 - 1:
            raise InvalidArgumentError(f"{kind}: at most {2**63 - 1}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e8:
        raise InvalidArgumentError(f"{kind}: US dollars, more than 0 and less than 100000000")
    return round(float(value), 6)


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "organization_id": row["organization_id"],
        "limits": {k: row[k] for k in limits.KINDS},
        "month": {
            "start": row["month"].isoformat(),
            "tokens": int(row["month_tokens"]),  # a model's and an embedder's
            "embedding_tokens": int(row["month_embedding_tokens"]),
            "estimated_cost": round(float(row["month_cost_usd"]), 6),
        },
    }
