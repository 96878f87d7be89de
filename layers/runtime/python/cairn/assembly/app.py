"""The HTTP API of this process: Letta's routes and every edge's, served with the runtime
assembly builds (functions/api and functions/stream use it)."""

from __future__ import annotations

from cairn import heap
from cairn.api import app, http
from cairn.api.lazy_routes import LazyRoutesResolver
from cairn.assembly.build import current_settings, runtime, snapshotting
from cairn.assembly.edges import EDGES


def build_app() -> LazyRoutesResolver:
    http.provide(runtime, current_settings)
    built = app.build_app(EDGES)
    if snapshotting():
        built.load()  # a snapshot holds every route module, as it holds the SDKs
    # What the cold start imported lives as long as the process: a collection while the
    # first request imports its route modules need not walk it (about 20 ms of that
    # request, docs/numbers.md). The runtime, built later, is settled again.
    heap.settle("import")
    return built
