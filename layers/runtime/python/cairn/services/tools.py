"""Tools: the organisation's tools, an agent's tools and their approval switch."""

from __future__ import annotations

import textwrap
import uuid
from typing import Any

from cairn.domain.tool_rules import RequiresApprovalToolRule
from cairn.domain.tools import Tool, ToolFilter
from cairn.errors import InvalidArgumentError, UnprocessableError, found, not_found
from cairn.run.backends.custom_tools import run_in_sandbox, secrets_environment
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services import memory_tools, search_tools
from cairn.services.agents import AgentView
from cairn.services.pages import EVERYTHING, Page, window
from cairn.services.requests import ToolCreate, ToolRunFromSource, ToolSearch, ToolUpdate
from cairn.store import agents, history, tenancy, tools
from cairn.store.blocks import for_agent as blocks_of
from cairn.store.db import Connection
from cairn.tools.args_schema import schema_from_args
from cairn.tools.registry import BUILTIN_TOOLS
from cairn.tools.sandbox import Network, SandboxRequest, SandboxResult
from cairn.tools.source import SourceError, derive_schema, function_named, takes_agent_state


def _builtins(conn: Connection, org: str) -> None:
    """Built-in tools exist in every organisation, as in Letta (created on first listing),
    with this version's schemas (a row written by an older one is brought up to date, as
    Letta re-writes its base tools at start)."""
    for spec in BUILTIN_TOOLS.values():
        kept = tools.get_by_name(conn, org, spec.name)
        if kept is None or (
            kept.tool_type == spec.tool_type and kept.json_schema != spec.json_schema
        ):
            tools.upsert(conn, spec.as_tool(org))


def _fetch(conn: Connection, org: str, tool_id: str) -> Tool:
    return found(tools.get(conn, org, tool_id), "Tool", tool_id)


def list_tools(
    rt: Runtime,
    org: str,
    where: ToolFilter,
    *,
    page: Page,
) -> list[Tool]:
    with rt.db.connection() as conn:
        _builtins(conn, org)
        return tools.list_tools(
            conn,
            org,
            where,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def add_builtins(rt: Runtime, org: str) -> list[Tool]:
    """Make sure the organisation has every built-in tool; they are created on first use
    anyway, this does it now (Letta's add-base-tools)."""
    with rt.db.transaction() as conn:
        _builtins(conn, org)
        return [t for t in (tools.get_by_name(conn, org, n) for n in BUILTIN_TOOLS) if t]


def search(rt: Runtime, org: str, req: ToolSearch) -> list[tuple[Tool, int, float]]:
    """Tools by full text over names and descriptions. Cairn keeps no tool embeddings, so
    every search mode is answered by full text."""
    if not req.query:
        return []
    with rt.db.connection() as conn:
        _builtins(conn, org)
        return tools.search(
            conn, org, req.query, tool_types=req.tool_types, tags=req.tags, limit=req.limit
        )


def count(rt: Runtime, org: str, where: ToolFilter | None = None) -> int:
    with rt.db.connection() as conn:
        _builtins(conn, org)
        return tools.count(conn, org, where)


def retrieve(rt: Runtime, org: str, tool_id: str) -> Tool:
    with rt.db.connection() as conn:
        return _fetch(conn, org, tool_id)


def from_source(
    req: ToolCreate, org: str, existing: Tool | None = None, *, source_given: bool = True
) -> Tool:
    """The tool `req` describes. Its schema is `json_schema` as given (named after a function
    of the source, when the source comes with it), else made from `args_json_schema`, else
    read from the source. A schema alone may rename a tool whose source stays (Letta)."""
    # A function defined inside another (the SDK's create_from_function sends
    # inspect.getsource) arrives indented: the same code, read at the top level.
    req = req.model_copy(update={"source_code": textwrap.dedent(req.source_code)})
    try:
        if req.json_schema is not None:
            schema = req.json_schema
            name = schema.get("name")
            if not isinstance(name, str) or not isinstance(schema.get("parameters"), dict):
                raise UnprocessableError("json_schema: needs a `name` and `parameters`")
            if source_given:
                function_named(req.source_code, name)
        elif req.args_json_schema is not None:
            schema = schema_from_args(req.source_code, req.args_json_schema)
            name = schema["name"]
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


def upsert(rt: Runtime, org: str, req: ToolCreate) -> Tool:
    """Letta: POST and PUT both upsert by name; the id stays."""
    with rt.db.transaction() as conn:
        probe = from_source(req, org)
        existing = tools.get_by_name(conn, org, probe.name)
        if existing is not None and existing.tool_type != "custom":
            raise InvalidArgumentError(f"`{probe.name}` is a built-in tool and cannot be replaced")
        return tools.upsert(conn, from_source(req, org, existing))


def delete(rt: Runtime, org: str, tool_id: str) -> None:
    with rt.db.transaction() as conn:
        if not tools.delete(conn, org, tool_id):
            raise not_found("Tool", tool_id)


def of_agent(
    rt: Runtime,
    org: str,
    agent_id: str,
    *,
    page: Page = EVERYTHING,
) -> list[Tool]:
    with rt.db.connection() as conn:
        agent_service.fetch(conn, org, agent_id)
        found = tools.for_agent(conn, org, agent_id)
    return window(found, page)


def attach(rt: Runtime, org: str, agent_id: str, tool_id: str, *, attach: bool) -> AgentView:
    with rt.db.transaction() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
        tool = _fetch(conn, org, tool_id)
        if attach:
            tools.attach(conn, org, agent.id, tool.id)
        else:
            tools.detach(conn, org, agent.id, tool.id)
        history.bump(conn, org, agent.id, f"tool {'attached' if attach else 'detached'}")
        return agent_service.view_of(conn, agent, sealer=rt.engine.sealer)


def set_approval(
    rt: Runtime, org: str, agent_id: str, tool_name: str, *, required: bool
) -> AgentView:
    with rt.db.transaction() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
        rules = [
            r
            for r in agent.tool_rules
            if not (r.type == "requires_approval" and r.tool_name == tool_name)
        ]
        if required:
            rules.append(RequiresApprovalToolRule(tool_name=tool_name))
        agent = agents.update(
            conn, agent.model_copy(update={"tool_rules": rules}), expected_version=agent.version
        )
        return agent_service.view_of(conn, agent, sealer=rt.engine.sealer)


def modify(rt: Runtime, org: str, tool_id: str, req: ToolUpdate) -> Tool:
    """Change a custom tool; new source (or schema) is read again as on create."""
    with rt.db.transaction() as conn:
        tool = _fetch(conn, org, tool_id)
        if tool.tool_type != "custom":
            raise InvalidArgumentError(f"`{tool.name}` is a built-in tool and cannot be changed")
        changes = req.model_dump(exclude_unset=True)
        if changes.get("json_schema") is not None and changes.get("args_json_schema") is not None:
            raise InvalidArgumentError("json_schema and args_json_schema: give one, not both")
        merged = ToolCreate(
            source_code=changes.pop("source_code", None) or tool.source_code or "",
            json_schema=changes.pop("json_schema", None)
            or (
                None
                if {"source_code", "args_json_schema"} & req.model_fields_set
                else tool.json_schema
            ),
            description=changes.get("description", tool.description),
            tags=changes.get("tags") if changes.get("tags") is not None else tool.tags,
            args_json_schema=changes.get("args_json_schema", tool.args_json_schema),
            return_char_limit=changes.get("return_char_limit") or tool.return_char_limit,
            pip_requirements=changes.get("pip_requirements", tool.pip_requirements),
            default_requires_approval=_either(
                changes.get("default_requires_approval"), tool.default_requires_approval
            ),
            enable_parallel_execution=_either(
                changes.get("enable_parallel_execution"), tool.enable_parallel_execution
            ),
        )
        given = "source_code" in req.model_fields_set
        updated = from_source(merged, org, tool, source_given=given)
        clash = tools.get_by_name(conn, org, updated.name)
        if clash is not None and clash.id != tool.id:
            raise InvalidArgumentError(f"A tool named `{updated.name}` exists already")
        changed = found(tools.update(conn, updated), "Tool", tool_id)  # deleted meanwhile
        return changed


def _either(value: bool | None, default: bool) -> bool:
    return default if value is None else value


def run_source(rt: Runtime, org: str, req: ToolRunFromSource) -> tuple[str, SandboxResult]:
    """Try a tool's source without storing it: the same sandbox as a step's calls. Returns
    the tool's name (from its source) and what the run gave."""
    tool = from_source(ToolCreate(source_code=req.source_code, json_schema=req.json_schema), org)
    if req.name is not None and req.name != tool.name:
        raise InvalidArgumentError(f"name: the source defines `{tool.name}`, not `{req.name}`")
    if takes_agent_state(tool.source_code or "", tool.name):
        raise InvalidArgumentError("source_code: a tool taking agent_state runs for an agent")
    with rt.db.connection() as conn:
        hosts = tenancy.tool_hosts(conn, org)
    return tool.name, rt.engine.sandbox.run(
        SandboxRequest(
            source=tool.source_code or "",
            name=tool.name,
            args=req.args,
            tool_call_id=_call_id(),
            timeout_seconds=rt.settings.tool_timeout_seconds,
            network=Network(org, hosts),
            environment=dict(req.env_vars or {}),
        )
    )


def run_for_agent(
    rt: Runtime, org: str, agent_id: str, tool_name: str, args: dict[str, Any]
) -> SandboxResult:
    """Run one of the agent's tools outside a run: a custom tool in the sandbox (nothing is
    written), a memory tool on its blocks (its edit saved: `memory_tools.py`)."""
    with rt.db.connection() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
        tool = next((t for t in tools.for_agent(conn, org, agent_id) if t.name == tool_name), None)
        held = blocks_of(conn, org, agent_id)
        hosts = tenancy.tool_hosts(conn, org)
        environment = secrets_environment(conn, rt.engine.sealer, agent)
    tool = found(tool, f"Tool `{tool_name}` is not attached to agent {agent_id}")
    if tool.tool_type != "custom" and memory_tools.runs_outside_a_step(tool.name):
        return memory_tools.run(rt, org, agent, tool.name, args)
    if tool.tool_type != "custom" and tool.name in search_tools.SEARCH_TOOLS:
        return search_tools.run(rt, org, agent, tool.name, args)
    if tool.tool_type != "custom":
        raise InvalidArgumentError(
            f"`{tool_name}` is a built-in tool that runs only inside a step (Cairn runs the "
            "memory and search tools here, and custom tools)"
        )
    return run_in_sandbox(
        rt.engine.sandbox,
        tool,
        args,
        _call_id(),
        agent=agent,
        blocks=held,
        default_timeout=rt.settings.tool_timeout_seconds,
        hosts=hosts,
        environment=environment,
    )


def _call_id() -> str:
    """An idempotency key for a call made outside a step, shaped like Letta's call ids."""
    return f"call_{uuid.uuid4().hex[:24]}"


def generate_schema(source_code: str, source_type: str | None) -> dict[str, Any]:
    """The JSON schema a tool made from this source would get; nothing is stored or run."""
    if source_type not in (None, "python"):
        raise InvalidArgumentError(f"source_type: Cairn runs python tools, not {source_type}")
    try:
        return derive_schema(textwrap.dedent(source_code))
    except SourceError as err:
        raise InvalidArgumentError(str(err)) from None
