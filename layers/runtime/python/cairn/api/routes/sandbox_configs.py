"""Sandbox configs and their environment variables (Letta's /v1/sandbox-config)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.params import After, Limit, SandboxConfigId
from cairn.domain.sandbox_configs import SandboxType
from cairn.services import sandbox_configs as service
from cairn.services.requests import SandboxConfigBody, SandboxEnvVarCreate, SandboxEnvVarUpdate

router = APIGatewayHttpRouter()


@router.post("/sandbox-config/")
def create_sandbox_config(req: Annotated[SandboxConfigBody, Body()]) -> Response[Any]:
    made = service.create_or_update(http.rt(), http.org_id(), req)
    return http.json_reply(200, letta.sandbox_config_json(made))


@router.get("/sandbox-config/")
def list_sandbox_configs(
    limit: Limit = 1000,
    after: After = None,
    sandbox_type: Annotated[SandboxType | None, Query()] = None,
) -> Response[Any]:
    found = service.list_configs(
        http.rt(), http.org_id(), kind=sandbox_type, after=after, limit=limit
    )
    return http.json_reply(200, [letta.sandbox_config_json(c) for c in found])


@router.post("/sandbox-config/e2b/default")
def create_default_e2b_sandbox_config() -> Response[Any]:
    return http.json_reply(
        200, letta.sandbox_config_json(service.default(http.rt(), http.org_id(), "e2b"))
    )


@router.post("/sandbox-config/local/default")
def create_default_local_sandbox_config() -> Response[Any]:
    return http.json_reply(
        200, letta.sandbox_config_json(service.default(http.rt(), http.org_id(), "local"))
    )


@router.post("/sandbox-config/local")
def create_custom_local_sandbox_config(req: Annotated[dict[str, Any], Body()]) -> Response[Any]:
    """The body is a LocalSandboxConfig itself (Letta), not wrapped in `config`."""
    made = service.create_or_update(
        http.rt(), http.org_id(), SandboxConfigBody(config=req), kind="local"
    )
    return http.json_reply(200, letta.sandbox_config_json(made))


@router.post("/sandbox-config/local/recreate-venv")
def force_recreate_local_sandbox_venv() -> Response[Any]:
    """Cairn's sandbox keeps no virtual environment to make again: the local config, as Letta
    answers once it has."""
    return http.json_reply(
        200, letta.sandbox_config_json(service.default(http.rt(), http.org_id(), "local"))
    )


@router.patch("/sandbox-config/<sandbox_config_id>")
def update_sandbox_config(
    sandbox_config_id: SandboxConfigId, req: Annotated[SandboxConfigBody, Body()]
) -> Response[Any]:
    changed = service.update(http.rt(), http.org_id(), sandbox_config_id, req)
    return http.json_reply(200, letta.sandbox_config_json(changed))


@router.delete("/sandbox-config/<sandbox_config_id>")
def delete_sandbox_config(sandbox_config_id: SandboxConfigId) -> Response[Any]:
    service.delete(http.rt(), http.org_id(), sandbox_config_id)
    return Response(status_code=204, body="")


@router.post("/sandbox-config/<sandbox_config_id>/environment-variable")
def create_sandbox_env_var(
    sandbox_config_id: SandboxConfigId, req: Annotated[SandboxEnvVarCreate, Body()]
) -> Response[Any]:
    made = service.put_var(http.rt(), http.org_id(), sandbox_config_id, req)
    return http.json_reply(200, letta.sandbox_env_var_json(made))


@router.get("/sandbox-config/<sandbox_config_id>/environment-variable")
def list_sandbox_env_vars(
    sandbox_config_id: SandboxConfigId, limit: Limit = 1000, after: After = None
) -> Response[Any]:
    found = service.vars_of(http.rt(), http.org_id(), sandbox_config_id, after=after, limit=limit)
    return http.json_reply(200, [letta.sandbox_env_var_json(v) for v in found])


@router.patch("/sandbox-config/environment-variable/<env_var_id>")
def update_sandbox_env_var(
    env_var_id: str, req: Annotated[SandboxEnvVarUpdate, Body()]
) -> Response[Any]:
    changed = service.update_var(http.rt(), http.org_id(), env_var_id, req)
    return http.json_reply(200, letta.sandbox_env_var_json(changed))


@router.delete("/sandbox-config/environment-variable/<env_var_id>")
def delete_sandbox_env_var(env_var_id: str) -> Response[Any]:
    service.delete_var(http.rt(), http.org_id(), env_var_id)
    return Response(status_code=204, body="")
