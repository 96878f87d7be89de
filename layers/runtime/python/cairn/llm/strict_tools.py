"""A tool's schema in OpenAI's strict form, as Letta 0.16.1's OpenAI client sends every tool
(`convert_to_structured_output` in letta/llm_api/helpers.py): `strict: true`, every property
required, no additional properties, nested objects and array items alike; a property keeps
only the keywords strict mode reads. A schema that cannot take the form (a property with no
type) is sent as it is, as Letta sends it."""

from __future__ import annotations

from typing import Any

# What a simple property keeps (Letta's list; a type list also keeps `title` but `default`).
_KEPT = ("enum", "format", "pattern", "minLength", "maxLength", "minimum", "maximum")


class NotStrict(ValueError):
    """A property strict mode cannot describe."""


def strict(function: dict[str, Any]) -> dict[str, Any]:
    """`{"name", "description", "parameters"}` in strict form, or as given if it cannot be."""
    try:
        properties = {
            name: _property(value)
            for name, value in (function.get("parameters") or {}).get("properties", {}).items()
        }
    except NotStrict:
        return function
    return {
        "name": function["name"],
        "description": function.get("description", ""),
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
            "required": list(properties),
        },
    }


def _property(prop: dict[str, Any]) -> dict[str, Any]:
    if "anyOf" in prop and "type" not in prop:
        return _any_of(prop)
    if "type" not in prop:
        raise NotStrict(f"a property with neither type nor anyOf: {prop}")
    kind = prop["type"]
    out: dict[str, Any]
    if isinstance(kind, list):
        out = {"type": kind, **_described(prop, "default")}
        out.update({k: prop[k] for k in (*_KEPT, "title") if k in prop})
        return out
    if kind == "object":
        if "properties" not in prop:
            raise NotStrict("an object property without properties")
        inner = {k: _property(v) for k, v in prop["properties"].items()}
        out = {"type": "object", "properties": inner, "additionalProperties": False}
        out["required"] = list(inner)
        return {**out, **_described(prop, "title")}
    if kind == "array":
        if "items" not in prop:
            raise NotStrict("an array property without items")
        return {"type": "array", "items": _property(prop["items"]), **_described(prop, "title")}
    out = {"type": kind, **_described(prop)}
    out.update({k: prop[k] for k in (*_KEPT, "default", "title") if k in prop})
    return out


def _any_of(prop: dict[str, Any]) -> dict[str, Any]:
    """Primitives only: one list of types; else each option in strict form."""
    options = prop["anyOf"]
    complex_ = any(
        ("type" in o and o["type"] in ("object", "array")) or ("type" not in o and "$ref" in o)
        for o in options
    )
    types = [o["type"] for o in options if "type" in o]
    if not complex_ and types:
        out: dict[str, Any] = {"type": types, **_described(prop, "default")}
        out.update({k: prop[k] for k in _KEPT if k in prop})
        return out
    out = {"anyOf": [_property(o) for o in options]}
    return {**out, **_described(prop, "default", "title")}


def _described(prop: dict[str, Any], *also: str) -> dict[str, Any]:
    return {k: prop[k] for k in ("description", *also) if k in prop}
