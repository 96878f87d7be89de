"""Letta 0.16.1's schemas of its built-in tools, word for word (`letta_schemas.json`, as a real
Letta 0.16.1 server lists them: `tools.json` of its fixtures): agents written for Letta, and
agents brought over from it, are prompted with the very texts they were prompted with there,
and Letta's tool listing shows them. A built-in of Cairn's own (none in Letta) keeps the
schema its signature and docstring make."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any


@cache
def letta_schemas() -> dict[str, dict[str, Any]]:
    """{name: {"description", "json_schema"}} of every Letta built-in."""
    found: dict[str, dict[str, Any]] = json.loads(
        Path(__file__).with_name("letta_schemas.json").read_text()
    )
    return found
