"""A page of a list, the one value every list route hands its service, and cursor pages over
small sets held in memory (an agent's tools or blocks).

Letta's lists take `before`/`after` ids and a `limit`; the SDK's auto-pager asks for the
page after the last id it saw until a page comes back empty, so a list that ignores `after`
makes it loop forever.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar


class _Dated(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_Dated)
Order = Literal["asc", "desc"]


@dataclass(frozen=True)
class Page:
    """At most `limit` items after / before a cursor id, in `order` (what "after" means in
    each list's order is its service's to say)."""

    limit: int
    after: str | None = None
    before: str | None = None
    order: Order = "asc"


# The whole of a set held in memory (an agent's blocks or tools), for callers inside Cairn.
EVERYTHING = Page(limit=sys.maxsize)


def window(items: Sequence[T], page: Page) -> list[T]:
    """The items strictly between the page's cursors, in its order of the given sequence, up
    to its limit.

    A cursor that is not in the set matches nothing, as the database's keyset pages do.
    """
    ordered = list(items) if page.order == "asc" else list(reversed(items))
    ids = [i.id for i in ordered]
    after, before = page.after, page.before
    if (after is not None and after not in ids) or (before is not None and before not in ids):
        return []
    start = ids.index(after) + 1 if after is not None else 0
    end = ids.index(before) if before is not None else len(ordered)
    return ordered[start:end][: page.limit]
