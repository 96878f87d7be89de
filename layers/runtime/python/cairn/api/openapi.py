"""/openapi.json: the routes as Powertools describes them (parameters, request bodies), with
each served operation's success response taken from Letta 0.16.1's own document.

`letta-0.16.1-openapi.json` beside this file is that document, trimmed to the resources
Cairn serves (paths, their schemas; header parameters left out), as a running 0.16.1
server published it. Declaring Letta's response shapes means a client generator, and the
schemathesis run in the tests, hold every answer to what a Letta client expects.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

LETTA_DOCUMENT = Path(__file__).with_name("letta-0.16.1-openapi.json")


@cache
def letta_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(LETTA_DOCUMENT.read_text())
    return document


def shape(path: str) -> str:
    """A path with its parameter names blanked: `/v1/agents/{}`."""
    return re.sub(r"\{[^}]+\}", "{}", path)


def _json(ref: str, description: str) -> dict[str, Any]:
    schema = {"$ref": f"#/components/schemas/{ref}"}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


# Cairn's answers Letta's document has no status for, declared so that every answer a
# client can get has a shape to hold it to (tests/api/test_schemathesis.py).
PAST_THE_BUDGET = _json("Run", "The run, still going past the request's budget: poll it")
PAST_THE_BUDGET_ROUTES = {
    ("post", "/v1/agents/{}/messages"),
    ("post", "/v1/agents/{}/summarize"),
    ("post", "/v1/groups/{}/messages"),
}
CLIENT_ERROR = _json("ErrorResponse", "The request cannot be served (the detail says why)")
ERROR_RESPONSE = {
    "title": "ErrorResponse",
    "description": "Letta's error body, {\"detail\": ...}; a model provider's failure is "
    '{"error": {"type", "message", ...}}',
    "anyOf": [
        {
            "type": "object",
            "required": ["detail"],
            "properties": {
                "detail": {
                    "anyOf": [
                        {"type": "string"},
                        {"type": "object"},
                        {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/ValidationError"},
                        },
                    ]
                }
            },
        },
        {
            "type": "object",
            "required": ["error"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["type", "message"],
                    "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
                }
            },
        },
    ],
}


def with_letta_responses(ours: dict[str, Any]) -> dict[str, Any]:
    letta = letta_document()
    theirs = {
        (method, shape(path)): op
        for path, ops in letta["paths"].items()
        for method, op in ops.items()
    }
    schemas = ours.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in letta["components"]["schemas"].items():
        schemas.setdefault(name, schema)
    schemas["ErrorResponse"] = ERROR_RESPONSE
    for path, ops in ours["paths"].items():
        for method, op in ops.items():
            responses = op["responses"]
            letta_op = theirs.get((method, shape(path)), {})
            for status, answer in letta_op.get("responses", {}).items():
                if status.startswith("2"):
                    responses[status] = answer
            if (method, shape(path)) in PAST_THE_BUDGET_ROUTES:
                responses["202"] = PAST_THE_BUDGET
            responses.setdefault("4XX", CLIENT_ERROR)
    return ours
