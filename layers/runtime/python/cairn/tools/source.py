"""A custom tool's JSON schema, read from its Python source without running it.

The API process holds database credentials, so user code is never imported there: the
signature and the Google-style docstring are read with `ast`. Types map to JSON Schema as
pydantic would map them for the built-in tools (`str` -> string, `list[int]` -> array of
integers, `X | None` -> X, optional, `Literal[...]` -> enum).
"""

from __future__ import annotations

import ast
from typing import Any

from cairn.domain.constants import MAX_TOOL_NAME_LENGTH

# Letta passes the agent's state to a tool that declares this parameter; it is not the model's.
AGENT_STATE = "agent_state"
MAX_SOURCE_CHARS = 100_000
_SCALARS = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "dict": "object",
    "list": "array",
    "Any": None,
}


class SourceError(ValueError):
    """Source a schema cannot be derived from; the message says what to fix."""


def derive_schema(source: str, name: str | None = None) -> dict[str, Any]:
    """`{"name", "description", "parameters"}` of the tool function in `source`."""
    import docstring_parser  # loaded when a tool is made from source, not by every request

    fn = _function(source, name)
    where = f"Failed to derive json schema for `{fn.name}`"
    docstring = ast.get_docstring(fn)
    if not docstring:
        raise SourceError(f"{where}: the function has no docstring")
    doc = docstring_parser.parse(docstring)
    described = {p.arg_name: p.description for p in doc.params}
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = list(zip(positional, defaults, strict=True))
    params += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
    if args.vararg or args.kwarg:
        raise SourceError(f"{where}: *args and **kwargs cannot be described to a model")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for arg, default in params:
        if arg.arg in ("self", AGENT_STATE):
            continue
        if arg.annotation is None:
            raise SourceError(f"{where}: parameter `{arg.arg}` has no type annotation")
        schema, optional = _type(arg.annotation, where, arg.arg)
        if described.get(arg.arg):
            schema["description"] = described[arg.arg]
        properties[arg.arg] = schema
        if default is None and not optional:
            required.append(arg.arg)
    description = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
    return {
        "name": fn.name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required},
    }


def function_named(source: str, name: str) -> None:
    """Raise SourceError unless `source` defines a top-level function `name`."""
    _function(source, name)


def takes_agent_state(source: str, name: str) -> bool:
    fn = _function(source, name)
    return any(a.arg == AGENT_STATE for a in [*fn.args.args, *fn.args.kwonlyargs])


def function_def(source: str, name: str | None = None) -> ast.FunctionDef:
    """The tool's function in `source`: the one named, or the last top-level one."""
    return _function(source, name)


def _function(source: str, name: str | None) -> ast.FunctionDef:
    if len(source) > MAX_SOURCE_CHARS:
        raise SourceError(f"source_code: at most {MAX_SOURCE_CHARS} characters")
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise SourceError(f"source_code: not valid Python ({err.msg}, line {err.lineno})") from None
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if name is not None:
        functions = [f for f in functions if f.name == name]
    if not functions:
        raise SourceError("source_code: no top-level function" + (f" `{name}`" if name else ""))
    fn = functions[-1]  # helpers come first; the tool is the last function, as in Letta
    if len(fn.name) > MAX_TOOL_NAME_LENGTH:
        raise SourceError(f"tool name `{fn.name}` is over {MAX_TOOL_NAME_LENGTH} characters")
    return fn


def _type(node: ast.expr, where: str, arg: str) -> tuple[dict[str, Any], bool]:
    """(JSON schema, optional?) of an annotation."""
    text = ast.unparse(node)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "str" annotations
        return _type(ast.parse(node.value, mode="eval").body, where, arg)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [node.left, node.right]
        kept = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        if len(kept) == 1:
            return _type(kept[0], where, arg)[0], True
    if isinstance(node, ast.Name) and node.id in _SCALARS:
        kind = _SCALARS[node.id]
        return ({"type": kind} if kind else {}), False
    if isinstance(node, ast.Subscript):
        outer = ast.unparse(node.value).split(".")[-1]
        inner = node.slice
        if outer == "Optional":
            return _type(inner, where, arg)[0], True
        if outer in ("list", "List", "Sequence"):
            return {"type": "array", "items": _type(inner, where, arg)[0]}, False
        if outer in ("dict", "Dict"):
            return {"type": "object"}, False
        if outer == "Literal":
            values = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            literals = [v.value for v in values if isinstance(v, ast.Constant)]
            kinds = {type(v).__name__ for v in literals}
            schema: dict[str, Any] = {"enum": literals}
            if len(kinds) == 1 and next(iter(kinds)) in _SCALARS:
                schema["type"] = _SCALARS[next(iter(kinds))]
            return schema, False
    raise SourceError(f"{where}: parameter `{arg}` has a type the model cannot use: {text}")
