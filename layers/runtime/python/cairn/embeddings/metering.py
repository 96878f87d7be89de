"""An embedder whose calls an organization pays for: refused once its monthly budget is
spent, and each call's tokens and cost recorded (docs/operations.md, "Budgets and limits").
The two are ports the runtime fills in (run/steps/step.py): this layer knows no store."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cairn.embeddings.base import Embedder, embed_counted


class Metered:
    def __init__(
        self,
        embedder: Embedder,
        *,
        allowed: Callable[[], None],
        record: Callable[[str, int], None],
    ) -> None:
        """`allowed` raises when the organization may not spend (its budget is spent);
        `record(model, tokens)` counts what a call spent."""
        self._embedder, self._allowed, self._record = embedder, allowed, record
        self.model, self.dim = embedder.model, embedder.dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        self._allowed()
        vectors, tokens = embed_counted(self._embedder, texts)
        self._record(self.model, tokens)
        return vectors
