"""Tools: the organisation's list, and an agent's tools with their approval switch (§5)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.models import listed_models, providers, resolve_embedding
from cairn.api.requests import ApprovalToggle, ToolCreate
from cairn.api.routes.agents import agent_state, get_agent
from cairn.domain.tool_rules import RequiresApprovalToolRule
from cairn.domain.tools import Tool
from cairn.errors import InvalidArgumentError, NotFoundError, UnprocessableError
from cairn.store import agents, tools
from cairn.store.db import Connection
from cairn.tools.registry import BUILTIN_TOOLS
from cairn.tools.source import SourceError, derive_schema, function_named

router = APIGatewayHttpRouter()


def _builtins(conn: Connection, org: str) -> None:
    """Built-in tools exist in every organisation, as in Letta (created on first listing)."""
    for spec in BUILTIN_TOOLS.values():
        if tools.get_by_name(conn, org, spec.name) is None:
            tools.upsert(conn, spec.as_tool(org))


def _get_tool(conn: Connection, tool_id: str) -> Tool:
    http.check_id("tool", tool_id, what="tool_id")
    tool = tools.get(conn, http.org_id(), tool_id)
    if tool is None:
        raise NotFoundError(f"Tool with id '{tool_id}' not found")
    return tool


@router.get("/tools/")
def list_tools() -> Response[Any]:
    org = http.org_id()
    with http.rt().db.connection() as conn:
        _builtins(conn, org)
        found = tools.list_tools(
            conn,
            org,
            name=http.query("name"),
            after=http.query("after"),
            before=http.query("before"),
            limit=http.query_int("limit", 50),
        )
    names = set(http.query_list("names"))
    search = http.query("search")
    found = [
        t
        for t in found
        if (not names or t.name in names) and (not search or search.lower() in t.name.lower())
    ]
    return http.json_reply(200, [letta.tool_json(t) for t in found])


def _from_source(req: ToolCreate, org: str, existing: Tool | None = None) -> Tool:
    try:
        if req.json_schema is not None:
            schema = req.json_schema
            name = schema.get("name")
            if not isinstance(name, str) or not isinstance(schema.get("parameters"), dict):
                raise UnprocessableError("json_schema: needs a `name` and `parameters`")
            function_named(req.source_code, name)
        else:
            schema = derive_schema(req.source_code)
            name = schema["name"]
    except SourceError as err:
        raise InvalidArgumentError(str(err)) from None
    fields: dict[str, Any] = {
        "organization_id": org,
        "name": name,
        "description": req.description or schema.get("description"),
        "tool_type": "custom",
        "source_type": req.source_type,
        "source_code": req.source_code,
        "json_schema": schema,
        "args_json_schema": req.args_json_schema,
        "tags": req.tags,
        "pip_requirements": req.pip_requirements,
        "default_requires_approval": req.default_requires_approval,
        "enable_parallel_execution": req.enable_parallel_execution,
    }
    if req.return_char_limit is not None:
        fields["return_char_limit"] = req.return_char_limit
    if existing is not None:
        fields["id"] = existing.id
    try:
        return Tool(**fields)
    except ValueError as err:
        raise UnprocessableError(str(err)) from None


def _upsert() -> Response[Any]:
    req: ToolCreate = http.body(ToolCreate)
    org = http.org_id()
    with http.rt().db.transaction() as conn:
        probe = _from_source(req, org)
        existing = tools.get_by_name(conn, org, probe.name)
        if existing is not None and existing.tool_type != "custom":
            raise InvalidArgumentError(f"`{probe.name}` is a built-in tool and cannot be replaced")
        stored = tools.upsert(conn, _from_source(req, org, existing))
    return http.json_reply(200, letta.tool_json(stored))


@router.post("/tools/")
def create_tool() -> Response[Any]:
    return _upsert()  # Letta: POST and PUT both upsert by name


@router.put("/tools/")
def upsert_tool() -> Response[Any]:
    return _upsert()


@router.get("/tools/<tool_id>")
def get_tool(tool_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        return http.json_reply(200, letta.tool_json(_get_tool(conn, tool_id)))


@router.delete("/tools/<tool_id>")
def delete_tool(tool_id: str) -> Response[Any]:
    with http.rt().db.transaction() as conn:
        if not tools.delete(conn, http.org_id(), http.check_id("tool", tool_id, what="tool_id")):
            raise InvalidArgumentError(f"Tool with id '{tool_id}' not found")
    return http.json_reply(200, None)


@router.get("/agents/<agent_id>/tools")
def agent_tools(agent_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        found = tools.for_agent(conn, agent.organization_id, agent.id)
    return http.json_reply(200, [letta.tool_json(t) for t in found])


def _toggle(agent_id: str, tool_id: str, *, attach: bool) -> Response[Any]:
    with http.rt().db.transaction() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        tool = _get_tool(conn, tool_id)
        if attach:
            tools.attach(conn, agent.organization_id, agent.id, tool.id)
        else:
            tools.detach(conn, agent.organization_id, agent.id, tool.id)
        if http.sdk_1x():
            return http.json_reply(200, None)
        return http.json_reply(200, agent_state(conn, agent))


@router.patch("/agents/<agent_id>/tools/attach/<tool_id>")
def attach_tool(agent_id: str, tool_id: str) -> Response[Any]:
    return _toggle(agent_id, tool_id, attach=True)


@router.patch("/agents/<agent_id>/tools/detach/<tool_id>")
def detach_tool(agent_id: str, tool_id: str) -> Response[Any]:
    return _toggle(agent_id, tool_id, attach=False)


@router.patch("/agents/<agent_id>/tools/approval/<tool_name>")
def tool_approval(agent_id: str, tool_name: str) -> Response[Any]:
    raw = http.current().body
    if raw:
        wanted = http.body(ApprovalToggle).requires_approval
    else:
        wanted = http.query_bool("requires_approval", True)
    with http.rt().db.transaction() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        rules = [
            r
            for r in agent.tool_rules
            if not (r.type == "requires_approval" and r.tool_name == tool_name)
        ]
        if wanted:
            rules.append(RequiresApprovalToolRule(tool_name=tool_name))
        agent = agents.update(
            conn, agent.model_copy(update={"tool_rules": rules}), expected_version=agent.version
        )
        if http.sdk_1x():
            return http.json_reply(200, None)
        return http.json_reply(200, agent_state(conn, agent))


@router.get("/models/")
def list_models() -> Response[Any]:
    found = listed_models(http.rt().settings)
    return http.json_reply(200, [m.model_dump(mode="json") for m in found])


@router.get("/models/embedding")
def list_embedding_models() -> Response[Any]:
    settings = http.rt().settings
    found = [
        resolve_embedding(f"openai/{m}", settings)
        for m in ("text-embedding-3-small", "text-embedding-3-large")
    ]
    return http.json_reply(
        200, [m.model_dump(mode="json") for m in found] if "openai" in providers(settings) else []
    )
