"""The HTTP API of this process: Letta's routes and every edge's, served with the runtime
assembly builds (functions/api and functions/stream use it)."""

from __future__ import annotations

from cairn.api import app, http
from cairn.api.lazy_routes import LazyRoutesResolver
from cairn.assembly.build import current_settings, runtime, snapshotting
from cairn.assembly.edges import EDGES


def build_app() -> LazyRoutesResolver:
    http.provide(runtime, current_settings)
    built = app.build_app(EDGES)
    if snapshotting():
        built.load()  # a snapshot holds every route module, as it holds the SDKs
    return built
