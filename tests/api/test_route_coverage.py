"""Cairn's routes against Letta 0.16.1's own OpenAPI document (taken from a running server).

For the resources Cairn serves, every operation of the document is either served, with
the parameters and request body the document gives it, or listed in docs/api.md's table of
what is not served. /openapi.json describes every served route with its request schemas.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cairn.api.openapi import letta_document, shape
from cairn.assembly.app import build_app

ROOT = Path(__file__).resolve().parents[2]
LETTA = letta_document()  # Letta 0.16.1's own document, trimmed to these resources
SCOPE = (
    "/v1/agents",
    "/v1/blocks",
    "/v1/tools",
    "/v1/runs",
    "/v1/steps",
    "/v1/groups",
    "/v1/passages",
    "/v1/archives",
    "/v1/tags",
    "/v1/models",
    "/v1/health",
    "/v1/messages",
    "/v1/providers",
    "/v1/identities",
    "/v1/sandbox-config",
    "/v1/mcp-servers",
    "/v1/folders",
    "/v1/sources",
    "/v1/chat",
    "/v1/jobs",
    "/v1/embeddings",
    "/v1/voice-beta",
)
METHODS = ("get", "post", "put", "patch", "delete")
# Cairn's own addition, documented in docs/memory.md ("History capture").
CAIRN_ONLY = {
    ("POST", "/v1/agents/{}/messages/capture"),
    ("GET", "/openapi.json"),
    # Scheduled messages (docs/api.md, "Scheduled messages"): Letta 0.16.1 has none.
    ("POST", "/v1/agents/{}/schedules"),
    ("GET", "/v1/agents/{}/schedules"),
    ("GET", "/v1/agents/{}/schedules/{}"),
    ("DELETE", "/v1/agents/{}/schedules/{}"),
    # An agent's history (docs/history.md): Letta 0.16.1 has none.
    ("GET", "/v1/agents/{}/history"),
    ("GET", "/v1/agents/{}/history/{}"),
    ("GET", "/v1/agents/{}/history/{}/diff"),
    ("GET", "/v1/agents/{}/history/{}/export"),
    ("POST", "/v1/agents/{}/rewind"),
    ("POST", "/v1/agents/{}/fork"),
    # Usage (docs/operations.md): Letta 0.16.1 has none.
    ("GET", "/v1/usage"),
    ("GET", "/v1/usage/limits"),
    # Telegram bots (docs/telegram.md): Letta 0.16.1 has none.
    ("POST", "/v1/telegram/bots"),
    ("GET", "/v1/telegram/bots"),
    ("GET", "/v1/telegram/bots/{}"),
    ("DELETE", "/v1/telegram/bots/{}"),
    ("POST", "/v1/telegram/webhook/{}"),
    # The console's page and files (docs/console.md).
    ("GET", "/console"),
    ("GET", "/console/"),
    ("GET", "/console/{}"),
}


def _operations(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), shape(path)): op
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
        if method in METHODS
    }


@pytest.fixture(scope="module")
def ours() -> dict[str, Any]:
    app = build_app()
    event = {
        "version": "2.0",
        "rawPath": "/openapi.json",
        "rawQueryString": "",
        "headers": {},
        "requestContext": {"http": {"method": "GET", "path": "/openapi.json"}, "stage": "$default"},
    }
    return json.loads(app.resolve(event, None)["body"])


def letta_ops() -> dict[tuple[str, str], dict[str, Any]]:
    return {k: v for k, v in _operations(LETTA).items() if k[1].startswith(SCOPE)}


def test_every_letta_operation_is_served_or_listed_with_a_reason(ours: dict[str, Any]) -> None:
    served = set(_operations(ours))
    readme = ROOT.joinpath("docs", "api.md").read_text()
    table = readme[readme.index("Not served, and why:") : readme.index("Differences a client")]
    listed = {
        (m, shape(p)) for m, p in re.findall(r"`(GET|POST|PUT|PATCH|DELETE) (/v1/[^`]+)`", table)
    }
    theirs = set(letta_ops())
    assert theirs - served - listed == set(), "neither served nor listed as not served"
    assert listed & served == set(), "listed as not served, but served"
    assert served - theirs == CAIRN_ONLY, "served but not in Letta's document"
    count = re.search(r"Cairn serves (\d+)(?: \(all\))? with the same paths", readme)
    assert count and int(count.group(1)) == len(theirs & served)
    assert re.search(rf"Of the {len(theirs)} operations", readme)


def _query_names(op: dict[str, Any]) -> set[str]:
    return {p["name"] for p in op.get("parameters", ()) if p["in"] in ("query", "path")}


def test_served_routes_take_letta_parameters_and_bodies(ours: dict[str, Any]) -> None:
    mine = _operations(ours)
    for key, theirs in letta_ops().items():
        if key not in mine:
            continue
        op = mine[key]
        path_params = {p["name"] for p in theirs.get("parameters", ()) if p["in"] == "path"}
        assert path_params <= _query_names(op), (key, path_params - _query_names(op))
        if "requestBody" in theirs and key[0] != "GET":
            assert "requestBody" in op, key
            # The same media type as Letta's (JSON, or a multipart form for uploads).
            assert set(op["requestBody"]["content"]) == set(theirs["requestBody"]["content"]), key
            schema = next(iter(op["requestBody"]["content"].values()))["schema"]
            assert schema.get("$ref") or schema.get("anyOf") or schema.get("type"), key


def test_every_served_route_is_described_with_its_inputs(ours: dict[str, Any]) -> None:
    letta = letta_ops()
    for (method, path), op in _operations(ours).items():
        if path == "/openapi.json":
            continue
        assert op.get("responses"), (method, path)
        if "200" in letta.get((method, path), {}).get("responses", {}):  # Letta's own shape
            assert op["responses"]["200"] == letta[(method, path)]["responses"]["200"]
        for name in re.findall(r"\{([^}]+)\}", path):
            assert name in _query_names(op) or "{}" in path, (method, path, name)
        if method in ("POST", "PUT", "PATCH") and not path.endswith(("/attach/{}", "/detach/{}")):
            bodiless = path.endswith(
                (
                    "/cancel",
                    "/reset-messages",
                    "/run",
                    "/approval/{}",
                    "/summarize",
                    "/add-base-tools",
                    "/transaction/{}",
                    "/providers/{}/check",
                    "/default",  # the sandbox configs made with their defaults
                    "/recreate-venv",
                    "/refresh",  # an MCP server's tools listed again
                    "/resync",
                    "/mcp/servers/{}/{}",  # an MCP server's tool registered by its name
                    "/files/close-all",  # an agent's file views
                    "/open",
                    "/close",
                )
            )
            assert "requestBody" in op or bodiless, (method, path)
