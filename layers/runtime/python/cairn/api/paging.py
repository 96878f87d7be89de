"""A list route's page, parsed once for every route: `@paged` serves Letta's four query
parameters (`after`, `before`, `limit`, `order`, validated and in /openapi.json as the
route's own) and hands the route one `page: Page`.

Powertools reads a route's parameters from its signature (`inspect.signature`), and its
`Depends` injects no query parameters: the wrapper's signature is the route's, `page`
replaced by the four."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from cairn.api.params import After, Before, Limit, OptionalLimit, Order
from cairn.services.pages import EVERYTHING, Page

Route = TypeVar("Route", bound=Callable[..., Any])


def paged(*, limit: int | None = 50, order: Order = "desc") -> Callable[[Route], Route]:
    """`limit` is the default page size (None: the whole list unless one is asked), `order`
    the default order."""

    def wrap(route: Route) -> Route:
        hints = typing.get_type_hints(route, include_extras=True)
        signature = inspect.signature(route)
        assert "page" in signature.parameters, f"{route.__name__} takes no page"
        served_params = [
            p.replace(annotation=hints[p.name])
            for p in signature.parameters.values()
            if p.name != "page"
        ]
        keyword = inspect.Parameter.KEYWORD_ONLY
        served_params += [
            inspect.Parameter("after", keyword, default=None, annotation=After),
            inspect.Parameter("before", keyword, default=None, annotation=Before),
            inspect.Parameter(
                "limit", keyword, default=limit, annotation=Limit if limit else OptionalLimit
            ),
            inspect.Parameter("order", keyword, default=order, annotation=Order),
        ]

        @functools.wraps(route)
        def served(*args: Any, **kwargs: Any) -> Any:
            if "page" in kwargs:  # another route's call, its page made (Letta's older paths)
                return route(*args, **kwargs)
            asked = kwargs.pop("limit", limit)
            page = Page(
                limit=asked or EVERYTHING.limit,
                after=kwargs.pop("after", None),
                before=kwargs.pop("before", None),
                order=kwargs.pop("order", order),
            )
            return route(*args, page=page, **kwargs)

        served.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=served_params, return_annotation=hints.get("return")
        )
        return typing.cast(Route, served)

    return wrap
