"""Cursor pages over small sets held in memory (an agent's tools or blocks).

Letta's lists take `before`/`after` ids and a `limit`; the SDK's auto-pager asks for the
page after the last id it saw until a page comes back empty, so a list that ignores `after`
makes it loop forever.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypeVar


class _Dated(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_Dated)
Order = Literal["asc", "desc"]


def window(
    items: Sequence[T],
    *,
    after: str | None = None,
    before: str | None = None,
    limit: int | None = None,
    order: Order = "asc",
) -> list[T]:
    """The items strictly between the cursors, in `order` of the given sequence, up to limit.

    A cursor that is not in the set matches nothing, as the database's keyset pages do.
    """
    ordered = list(items) if order == "asc" else list(reversed(items))
    ids = [i.id for i in ordered]
    if (after is not None and after not in ids) or (before is not None and before not in ids):
        return []
    start = ids.index(after) + 1 if after is not None else 0
    end = ids.index(before) if before is not None else len(ordered)
    page = ordered[start:end]
    return page if limit is None else page[:limit]
