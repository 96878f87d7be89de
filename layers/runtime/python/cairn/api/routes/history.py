"""An agent's history: its timeline, its state at a version, a diff, rewind and fork (Cairn's
own routes, under the agent's path: Letta 0.16.1 has none; docs/history.md)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.letta.times import iso
from cairn.api.params import AgentId, Version
from cairn.domain.configs import LETTA_TEMPERATURE
from cairn.services import agents, fork, history, rewind
from cairn.services.requests import ForkRequest, RewindRequest

router = APIGatewayHttpRouter()


def _json(value: Any) -> Any:
    """Times as Letta writes them, the rest as it is."""
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v) for v in value]
    if hasattr(value, "isoformat"):
        return iso(value)
    return value


def _config(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The settings as the agent's own view shows them: a model config with no temperature
    set shows Letta's default, as GET /v1/agents/{id} does (it showed null)."""
    llm = (config or {}).get("llm_config")
    if config is None or not isinstance(llm, dict):
        return config
    shown = LETTA_TEMPERATURE if llm.get("temperature") is None else llm["temperature"]
    return {**config, "llm_config": {**llm, "temperature": shown}}


@router.get("/agents/<agent_id>/history")
def list_agent_history(
    agent_id: AgentId,
    before: Annotated[int | None, Query(ge=1, le=2**62)] = None,
    limit: Annotated[int, Query(ge=1, le=history.MAX_PAGE)] = 50,
) -> Response[Any]:
    """The agent's versions, newest first (`before`: a version, for the next page)."""
    found = history.timeline(http.rt(), http.org_id(), agent_id, before=before, limit=limit)
    return http.json_reply(200, _json(found))


@router.get("/agents/<agent_id>/history/<version>")
def retrieve_agent_version(agent_id: AgentId, version: Version) -> Response[Any]:
    at = history.state(http.rt(), http.org_id(), agent_id, version)
    shown = {
        **history.summary(at.row),
        "blocks": [
            {k: b[k] for k in ("block_id", "version", "label", "value", "limit", "description")}
            | {"read_only": b["read_only"]}
            for b in at.blocks
        ],
        "deleted_block_ids": at.missing_blocks,
        "message_ids": at.message_ids,
        "deleted_message_ids": at.missing_message_ids,
        "system_prompt": at.system,
        "config": _config(at.config),
        "tools": at.tools,
    }
    return http.json_reply(200, _json(shown))


@router.get("/agents/<agent_id>/history/<version>/diff")
def diff_agent_versions(
    agent_id: AgentId,
    version: Version,
    against: Annotated[int, Query(ge=1, le=2**62, description="The older version")],
) -> Response[Any]:
    """What changed from `against` to `version`."""
    found = history.diff(http.rt(), http.org_id(), agent_id, against, version)
    return http.json_reply(200, _json(found))


@router.post("/agents/<agent_id>/rewind")
def rewind_agent(agent_id: AgentId, req: Annotated[RewindRequest, Body()]) -> Response[Any]:
    done = rewind.rewind(http.rt(), http.org_id(), agent_id, req.version, archival=req.archival)
    return http.json_reply(200, done)


@router.post("/agents/<agent_id>/fork")
def fork_agent(agent_id: AgentId, req: Annotated[ForkRequest, Body()]) -> Response[Any]:
    """A new agent from this one's state at `version` (answered as the agent)."""
    made = fork.fork(
        http.rt(),
        http.org_id(),
        agent_id,
        req.version,
        name=req.name,
        copy_shared_blocks=req.copy_shared_blocks,
    )
    view = agents.retrieve(http.rt(), http.org_id(), made.id)
    return http.json_reply(200, letta.view_json(view))
