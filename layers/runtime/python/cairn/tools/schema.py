"""OpenAI-style JSON schemas made from typed Python functions and their docstrings.

A built-in tool is written once, as a function; its signature gives the argument types
and defaults, its Google-style docstring the descriptions. The same pydantic model that
produces the schema validates the model's arguments, so the two can never drift apart.
A leading parameter named `ctx` is the runtime's, never the model's, and stays out.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from cairn.domain.constants import MAX_TOOL_NAME_LENGTH

CONTEXT_PARAMETER = "ctx"
REQUEST_HEARTBEAT = "request_heartbeat"
THINKING = "thinking"
# Letta 0.16.1's words (constants.REQUEST_HEARTBEAT_DESCRIPTION, local_llm/constants.py's
# INNER_THOUGHTS_KWARG_DESCRIPTION): an agent from Letta reads what it read there.
REQUEST_HEARTBEAT_DESCRIPTION = (
    "Request an immediate heartbeat after function execution. You MUST set this value to "
    "`True` if you want to send a follow-up message or run a follow-up tool call (chain "
    "multiple tools together). If set to `False` (the default), then the chain of execution "
    "will end immediately after this function call."
)
THINKING_DESCRIPTION = "Deep inner monologue private to you only."


class ToolArgumentError(ValueError):
    """The model's arguments do not fit the tool's schema; the message is for the model."""


def args_model(fn: Callable[..., Any]) -> type[BaseModel]:
    """A pydantic model of the function's model-facing parameters, described by its docstring."""
    import docstring_parser  # loaded by the first schema made (a step's, a new tool's)

    hints = get_type_hints(fn)
    described = {p.arg_name: p.description for p in docstring_parser.parse(fn.__doc__ or "").params}
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(fn).parameters.items():
        if name == CONTEXT_PARAMETER:
            continue
        if not described.get(name):
            raise TypeError(f"{fn.__name__}: parameter `{name}` has no description in Args:")
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[name] = (hints[name], Field(default, description=described[name]))
    return create_model(f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def function_schema(fn: Callable[..., Any], model: type[BaseModel] | None = None) -> dict[str, Any]:
    """`{"name", "description", "parameters"}` as OpenAI's function calling and Letta store it."""
    import docstring_parser

    name = fn.__name__
    if len(name) > MAX_TOOL_NAME_LENGTH:
        raise TypeError(f"tool name `{name}` is over {MAX_TOOL_NAME_LENGTH} characters")
    doc = docstring_parser.parse(fn.__doc__ or "")
    description = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
    if not description:
        raise TypeError(f"{name}: a tool needs a docstring that says what it does")
    raw = (model or args_model(fn)).model_json_schema()
    defs = raw.get("$defs", {})
    properties = {
        key: _plain(_inline(value, defs)) for key, value in raw.get("properties", {}).items()
    }
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": list(raw.get("required", [])),
        },
    }


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """The schema with pydantic's `$ref`s to its `$defs` written out (an argument that is a
    list of objects), titles dropped: what Letta lists and providers read."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _inline(defs[ref.removeprefix("#/$defs/")], defs)
    inlined = {k: _inline(v, defs) for k, v in node.items() if k != "title"}
    if isinstance(inlined.get("properties"), dict):  # a nested object's fields, as the top's
        inlined["properties"] = {k: _plain(v) for k, v in inlined["properties"].items()}
    return inlined


def _plain(prop: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles and defaults, and show `X | None` as X (optional by omission)."""
    prop = {k: v for k, v in prop.items() if k not in ("title", "default")}
    options = prop.pop("anyOf", None)
    if options is not None:
        kept = [o for o in options if o.get("type") != "null"]
        prop = {**(kept[0] if len(kept) == 1 else {"anyOf": kept}), **prop}
    return prop


def with_runtime_arguments(
    schema: dict[str, Any], *, request_heartbeat: bool, thinking: bool
) -> dict[str, Any]:
    """The schema as the model sees it: plus `thinking` first and `request_heartbeat` last.
    A tool with no arguments or only optional ones (common among MCP tools) may come with no
    `required`, no `properties`, or no `parameters` at all: JSON Schema's defaults."""
    parameters = schema.get("parameters") or {}
    properties = dict(parameters.get("properties") or {})
    required = list(parameters.get("required") or [])
    if thinking:
        properties = {
            THINKING: {"type": "string", "description": THINKING_DESCRIPTION},
            **properties,
        }
        required.insert(0, THINKING)
    if request_heartbeat:
        properties[REQUEST_HEARTBEAT] = {
            "type": "boolean",
            "description": REQUEST_HEARTBEAT_DESCRIPTION,
        }
        required.append(REQUEST_HEARTBEAT)
    shaped = {"type": "object", **parameters, "properties": properties, "required": required}
    return {**schema, "parameters": shaped}


def split_runtime_arguments(
    args: dict[str, Any],
) -> tuple[dict[str, Any], bool | None, str | None]:
    """(the tool's own arguments, request_heartbeat, thinking): runtime ones never reach it."""
    own = dict(args)
    heartbeat = own.pop(REQUEST_HEARTBEAT, None)
    thinking = own.pop(THINKING, None)
    if isinstance(heartbeat, str):  # some models send "true"/"false"
        heartbeat = heartbeat.strip().lower() == "true"
    return (
        own,
        (bool(heartbeat) if heartbeat is not None else None),
        (str(thinking) if thinking is not None else None),
    )


def validate_arguments(model: type[BaseModel], tool_name: str, args: Any) -> dict[str, Any]:
    """The arguments checked and coerced by the tool's model, or an error the model can act on."""
    if not isinstance(args, dict):
        raise ToolArgumentError(f"Arguments to `{tool_name}` must be a JSON object.")
    try:
        checked = model.model_validate(args)
    except ValidationError as err:
        problems = "; ".join(
            f"`{'.'.join(str(p) for p in e['loc']) or 'arguments'}`: {e['msg']}"
            for e in err.errors(include_url=False)
        )
        raise ToolArgumentError(f"Invalid arguments to `{tool_name}`: {problems}.") from None
    return {name: getattr(checked, name) for name in type(checked).model_fields}
