"""Embeddings an organization pays for: refused once its monthly budget is spent, each
call's tokens and cost counted in its month and its day's usage (migration 0040;
docs/operations.md, "Budgets and limits"). Archival inserts and searches, message search
and the embedding jobs, files' chunks and their search all embed through the engine's
`embedder_for(config, org)`; a model in this process costs nothing and is not metered."""

from __future__ import annotations

from cairn.config import Settings
from cairn.domain.limits import budget_spent
from cairn.embeddings.base import Embedder
from cairn.embeddings.metering import Metered
from cairn.prices import price_of, prices
from cairn.store import limits
from cairn.store.db import Database


def paid_by(org: str, embedder: Embedder, db: Database, settings: Settings) -> Embedder:
    if getattr(embedder, "free", False):
        return embedder

    def allowed() -> None:
        with db.connection() as conn:
            spent = limits.spent(conn, org)
        if spent is not None:
            raise budget_spent(org, spent)

    def record(model: str, tokens: int) -> None:
        price = price_of(model, prices(settings.prices))
        cost = tokens * (price or {}).get("input", 0.0) / 1_000_000  # not rounded: tiny
        with db.connection() as conn:
            limits.add_embedding(conn, org, model, tokens, cost)

    return Metered(embedder, allowed=allowed, record=record)
