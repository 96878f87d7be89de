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
    return json.loads(LETTA_DOCUMENT.read_text())


def shape(path: str) -> str:
    """A path with its parameter names blanked: `/v1/agents/{}`."""
    return re.sub(r"\{[^}]+\}", "{}", path)


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
    for path, ops in ours["paths"].items():
        for method, op in ops.items():
            success = theirs.get((method, shape(path)), {}).get("responses", {}).get("200")
            if success is not None:
                op["responses"]["200"] = success
    return ours
