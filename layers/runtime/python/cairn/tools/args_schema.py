"""A custom tool's JSON schema from its `args_json_schema` (what `tools.upsert_from_function
(args_schema=...)` sends: a pydantic model's JSON schema, nested models under `$defs`).

As Letta 0.16.1 does (services/tool_schema_generator.py): the name is the tool function's,
the description its whole docstring (or "The <name> tool" without one: no docstring is
needed), and each argument of the model becomes a parameter. A nested model is written out
in place of its `$ref` (an object with its fields' types and descriptions and its required
ones), an optional field (`anyOf` with null) takes its other type, and every parameter has
a description (empty when the model gave none).
"""

from __future__ import annotations

import ast
from typing import Any

from cairn.tools.source import SourceError, function_def

_SCALARS = ("string", "integer", "number", "boolean")


def schema_from_args(source: str, args: dict[str, Any]) -> dict[str, Any]:
    fn = function_def(source)
    description = ast.get_docstring(fn) or f"The {fn.name} tool"
    defs = args.get("$defs") or {}
    properties = args.get("properties")
    if not isinstance(properties, dict):
        raise SourceError("args_json_schema: needs `properties`, an object")
    parameters = {
        name: {
            **_type(field, defs, f"args_json_schema.properties.{name}"),
            "description": field.get("description", ""),
        }
        for name, field in properties.items()
    }
    required = [name for name in args.get("required", []) if name in properties]
    return {
        "name": fn.name,
        "description": description,
        "parameters": {"type": "object", "properties": parameters, "required": required},
    }


def _type(field: Any, defs: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(field, dict):
        raise SourceError(f"{where}: not a schema")
    if "$ref" in field:
        name, model = _resolve(field["$ref"], defs, where)
        if where.count(f"<{name}>") or where.count(".") > 20:
            raise SourceError(f"{where}: `$ref` {name} contains itself")
        return _model(model, defs, f"{where}<{name}>")
    if "anyOf" in field:
        kept = [t for t in field["anyOf"] if not (isinstance(t, dict) and t.get("type") == "null")]
        if len(kept) != 1:
            raise SourceError(f"{where}: a union of several types is not supported")
        return _type(kept[0], defs, where)
    kind = field.get("type")
    if kind in _SCALARS:
        return {"type": kind}
    if kind == "array":
        items = field.get("items")
        return {
            "type": "array",
            "items": _type(items, defs, f"{where}.items") if items else {"type": "string"},
        }
    if kind == "object":
        return {"type": "object"}  # a dict of anything
    raise SourceError(f"{where}: type {kind!r} is not supported")


def _model(model: dict[str, Any], defs: dict[str, Any], where: str) -> dict[str, Any]:
    """A nested model, written out: its fields, their descriptions, its required ones."""
    fields = model.get("properties")
    if not isinstance(fields, dict):
        raise SourceError(f"{where}: the model it names has no `properties`")
    written: dict[str, Any] = {
        "type": "object",
        "properties": {
            name: {
                **_type(field, defs, f"{where}.{name}"),
                "description": field.get("description", ""),
            }
            for name, field in fields.items()
        },
        "required": list(model.get("required", [])),
    }
    if "description" in model:
        written["description"] = model["description"]
    return written


def _resolve(ref: Any, defs: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    name = ref.rsplit("/", 1)[-1] if isinstance(ref, str) and ref.startswith("#/$defs/") else None
    if name is None or not isinstance(defs.get(name), dict):
        raise SourceError(f"{where}: `$ref` {ref!r} names nothing under `$defs`")
    found: dict[str, Any] = defs[name]
    return name, found
