"""Route modules load when a request first needs them (cairn/api/lazy_routes.py): each
module's entry names exactly the rules it registers, no path is served by two modules with
one method (so the order they load in cannot change which route answers), and a request
loads the modules serving its path and no other."""

from __future__ import annotations

import importlib
import itertools
import threading
import time
import uuid
from typing import Any

import pytest

from cairn.api import lazy_routes
from cairn.api.app import build_app, route_modules
from cairn.api.lazy_routes import pattern
from cairn.assembly.edges import EDGES

MODULES = route_modules(EDGES)


def concrete(rule: str) -> str:
    """A path the rule serves under /v1 (each parameter `x`)."""
    return "/v1" + "/".join("x" if s.startswith("<") else s for s in rule.split("/"))


def registered(name: str) -> dict[str, set[str]]:
    """Rule -> methods, as the module's router registers them (Powertools keeps them on
    `Router._routes`, keyed by rule and methods first)."""
    rules: dict[str, set[str]] = {}
    for key in importlib.import_module(name).router._routes:
        rule, methods = key[0], key[1]
        rules.setdefault(rule, set()).update((methods,) if isinstance(methods, str) else methods)
    return rules


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_modules_entry_names_the_rules_its_router_registers(name: str) -> None:
    served = registered(name)
    assert set(MODULES[name]) == set(served), f"{name} serves {tuple(served)}"


def _overlap(a: str, b: str) -> bool:
    """Whether one path can match both rules (a parameter is any one segment)."""
    sa, sb = a.split("/"), b.split("/")
    return len(sa) == len(sb) and all(
        x == y or x.startswith("<") or y.startswith("<") for x, y in zip(sa, sb, strict=True)
    )


def test_no_path_is_served_by_two_modules_with_one_method() -> None:
    # Powertools tries rules without parameters first, then the others in the order they
    # were included: two modules' rules with parameters that one path matches would answer
    # by load order. A rule without parameters wins over them whatever loaded first.
    clashes = []
    for (ma, ra), (mb, rb) in itertools.combinations(((m, registered(m)) for m in MODULES), 2):
        for (a, am), (b, bm) in itertools.product(ra.items(), rb.items()):
            dynamic = "<" in a and "<" in b
            if am & bm and _overlap(a, b) and (dynamic or a == b):
                clashes.append((ma, a, mb, b))
    assert clashes == []


def test_every_rule_loads_its_module_and_no_module_loads_for_another_path() -> None:
    served = {name: pattern("/v1", rules) for name, rules in MODULES.items()}
    for name, rules in MODULES.items():
        for rule in rules:
            path = concrete(rule)
            loading = {n for n, p in served.items() if p.search(path)}
            assert name in loading, (name, rule)
            # Another module only where it serves a path of that shape too.
            for other in loading - {name}:
                assert any(_overlap(rule, r) for r in MODULES[other]), (path, other)


def event(method: str, path: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {},
        "requestContext": {"http": {"method": method, "path": path}, "stage": "$default"},
        "isBase64Encoded": False,
    }


def test_a_request_loads_the_modules_serving_its_path_and_answers_as_before() -> None:
    eager = build_app(EDGES)
    eager.load()
    app = build_app(EDGES)
    assert app.loaded == []  # built with no route module imported

    def same(method: str, path: str) -> dict[str, Any]:
        answer = app.resolve(event(method, path), None)
        assert answer == eager.resolve(event(method, path), None), (method, path)
        return answer

    # No key: the route is found (its module loaded), then the request refused.
    assert same("GET", f"/v1/agents/agent-{uuid.uuid4()}/messages")["statusCode"] == 401
    assert app.loaded == ["cairn.api.routes.messages"]

    # A path two modules serve (the import's own rule, and any agent's id) loads both.
    same("POST", "/v1/agents/import")
    assert set(app.loaded[1:]) == {"cairn.api.routes.agents", "cairn.agent_files.routes"}

    # A collection without its slash loads the module of its redirect (tests/api's
    # test_http_contract.py follows it with a key).
    same("GET", "/v1/folders")
    assert app.loaded[-1] == "cairn.api.routes.folders"

    # A path with no route loads nothing, nor does one of a module already loaded.
    before = list(app.loaded)
    same("GET", "/v1/nowhere/at/all")
    same("PUT", "/v1/tags/")
    assert app.loaded == before

    # Every route, in an order of its own, answers as the app with every module loaded.
    for name in sorted(MODULES, reverse=True):
        for rule, methods in registered(name).items():
            for method in sorted(methods):
                same(method, concrete(rule))
    assert set(app.loaded) == set(MODULES)


def test_the_openapi_document_loads_every_route_module() -> None:
    app = build_app(EDGES)
    document = app.get_openapi_schema(title="t", version="1")
    assert set(app.loaded) == set(MODULES)
    assert "/v1/agents/{agent_id}/messages" in (document.paths or {})


def test_modules_loaded_from_many_threads_at_once_are_each_included_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One resolver answers one request at a time (Powertools keeps the request on the
    # resolver; the local stack gives each of its environments a resolver and a lock), but
    # nothing need rely on it: paths loaded together include each module once. An import
    # is made slow, as a cold one is, so that the threads meet inside it.
    imported = importlib.import_module

    def slowly(name: str) -> Any:
        time.sleep(0.02)
        return imported(name)

    monkeypatch.setattr(lazy_routes.importlib, "import_module", slowly)
    eager = build_app(EDGES)
    eager.load()
    app = build_app(EDGES)
    paths = [
        f"/v1/agents/agent-{uuid.uuid4()}/messages",
        "/v1/runs/",
        "/v1/tools/",
        "/v1/blocks/",
        "/v1/agents/import",
        "/v1/folders/",
        "/v1/mcp-servers/",
        "/v1/usage",
    ] * 3
    start = threading.Barrier(len(paths))

    def first(path: str) -> None:
        start.wait()
        app.load(path)

    threads = [threading.Thread(target=first, args=(p,)) for p in paths]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(app.loaded) == len(set(app.loaded)) >= 8
    app.load()
    routes = len(app._static_routes) + len(app._dynamic_routes)
    assert routes == len(eager._static_routes) + len(eager._dynamic_routes)
