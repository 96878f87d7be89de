"""A resolver whose route modules are imported when a request first needs one.

Importing every route module, and the services and Letta schemas behind them, was over a
quarter of the api and stream functions' cold import (docs/numbers.md); a request needs
one or two of them. The rules each module serves are known without importing it
(`cairn.api.routes.SERVED`, each edge's record), so before it resolves a path the resolver
includes every module not yet loaded with a rule that matches it. No two modules serve one
path with one method (tests/unit/test_lazy_routes.py), so the order in which they load
cannot change which route answers a request.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi.models import OpenAPI
    from aws_lambda_powertools.utilities.typing import LambdaContext

PARAMETER = re.compile(r"<\w+>")  # Powertools' dynamic segment; it never spans a `/`


def pattern(prefix: str, rules: tuple[str, ...]) -> re.Pattern[str]:
    """What matches a path any of `rules` serves under `prefix`, found anywhere in the raw
    path (after an API Gateway stage), with or without its last `/` (the app answers the
    other form with a redirect)."""
    return re.compile(f"(?:{_shapes(prefix, rules)})/?$")


def _shapes(prefix: str, rules: tuple[str, ...]) -> str:
    return "|".join(
        "[^/]+".join(re.escape(part) for part in PARAMETER.split(prefix + rule.rstrip("/")))
        for rule in rules
    )


class LazyRoutesResolver(APIGatewayHttpResolver):
    """Powertools' resolver for API Gateway HTTP APIs, with `modules` (name -> the rules
    its `router` registers) included under `prefix` as requests first reach them."""

    def __init__(self, modules: Mapping[str, tuple[str, ...]], prefix: str) -> None:
        super().__init__(enable_validation=True)
        self._prefix = prefix
        self._rules = dict(modules)
        self._pending = {name: pattern(prefix, rules) for name, rules in modules.items()}
        # Every pending module's rules in one pattern: once a path's modules are loaded, a
        # request asks one search, not one per module still pending (about twenty).
        self._any_pending = self._joined()
        self._loading = threading.Lock()  # the local stack serves requests on threads
        self.loaded: list[str] = []  # the modules included so far, in order

    def load(self, path: str | None = None) -> None:
        """Include each module not yet loaded that serves `path` (every one when None)."""
        # Read without the lock: modules only leave the pending set, so a pattern replaced
        # meanwhile at worst sends this request to the loop below for nothing.
        if path is not None and not self._any_pending.search(path):
            return
        with self._loading:
            for name, served in list(self._pending.items()):
                if path is None or served.search(path):
                    module = importlib.import_module(name)
                    self.include_router(module.router, prefix=self._prefix)
                    del self._pending[name]
                    self.loaded.append(name)
            self._any_pending = self._joined()

    def _joined(self) -> re.Pattern[str]:
        shapes = "|".join(_shapes(self._prefix, self._rules[name]) for name in self._pending)
        return re.compile(f"(?:{shapes})/?$" if shapes else "(?!)")  # (?!) matches nothing

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        self.load(event.get("rawPath") or event.get("path") or "")
        return super().resolve(event, context)

    def get_openapi_schema(self, **kwargs: Any) -> OpenAPI:
        self.load()  # the document describes every route
        return super().get_openapi_schema(**kwargs)
