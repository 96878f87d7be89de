"""Agent files: export an agent as Letta 0.16.1's .af, import one."""

from __future__ import annotations

import json
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import File, Form, Header
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http
from cairn.api.params import AgentId, Version
from cairn.errors import InvalidArgumentError

router = APIGatewayHttpRouter()


@router.get("/agents/<agent_id>/export")
def export_agent(
    agent_id: AgentId, max_steps: int = 100, use_legacy_format: bool = False
) -> Response[Any]:
    """The agent as an agent file (`max_steps` is taken and unused, as in Letta)."""
    if use_legacy_format:
        raise InvalidArgumentError("use_legacy_format: the legacy format is no longer exported")
    # The agent-file models (5 ms) load with the first export or import, not every cold start.
    from cairn.agent_files import exporting

    data = exporting.export(http.rt(), http.org_id(), agent_id)
    body = json.dumps(data, indent=2, ensure_ascii=False)
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=body)


@router.get("/agents/<agent_id>/history/<version>/export")
def export_agent_version(agent_id: AgentId, version: Version) -> Response[Any]:
    """The agent as of a version of its history, as an agent file (docs/history.md)."""
    from cairn.agent_files import exporting

    data = exporting.export_at(http.rt(), http.org_id(), agent_id, version)
    body = json.dumps(data, indent=2, ensure_ascii=False)
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=body)


@router.post("/agents/import")
def import_agent(
    file: Annotated[bytes, File()],
    override_existing_tools: Annotated[bool, Form()] = True,
    strip_messages: Annotated[bool, Form()] = False,
    secrets: Annotated[str | None, Form()] = None,
    name: Annotated[str | None, Form()] = None,
    embedding: Annotated[str | None, Form()] = None,
    append_copy_suffix: Annotated[bool, Form()] = True,
    override_name: Annotated[str | None, Form()] = None,
    override_embedding_handle: Annotated[str | None, Form()] = None,
    project_id: Annotated[str | None, Form()] = None,
    env_vars_json: Annotated[str | None, Form()] = None,
    x_override_embedding_model: Annotated[
        str | None, Header(alias="x-override-embedding-model")
    ] = None,
) -> Response[Any]:
    """Letta's import form; the deprecated names count where the new ones are not given."""
    tool_secrets = secrets or env_vars_json
    parsed = None
    if tool_secrets is not None:
        try:
            parsed = json.loads(tool_secrets)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise InvalidArgumentError("secrets must be a valid JSON string")
    from cairn.agent_files import importing

    options = importing.ImportOptions(
        override_existing_tools=override_existing_tools,
        append_copy_suffix=append_copy_suffix,
        name=name or override_name,
        embedding=embedding or override_embedding_handle or x_override_embedding_model,
        strip_messages=strip_messages,
        secrets={str(k): str(v) for k, v in parsed.items()} if parsed else None,
    )
    parsed_file = importing.parse(file)
    created = importing.import_file(http.rt(), http.org_id(), parsed_file, options)
    return http.json_reply(200, {"agent_ids": created})
