"""Providers: an organization's own model providers and keys (Letta's BYOK providers)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.paging import paged
from cairn.api.params import ProviderId
from cairn.domain.providers import ProviderType
from cairn.services import providers
from cairn.services.pages import Page
from cairn.services.requests import ProviderCheck, ProviderCreate, ProviderUpdate

router = APIGatewayHttpRouter()


@router.get("/providers/")
@paged(limit=50, order="desc")
def list_providers(
    name: str | None = None,
    provider_type: ProviderType | None = None,
    *,
    page: Page,
) -> Response[Any]:
    found = providers.list_providers(
        http.rt(),
        http.org_id(),
        name=name,
        provider_type=provider_type,
        page=page,
    )
    return http.json_reply(200, [letta.provider_json(p) for p in found])


@router.post("/providers/")
def create_provider(req: Annotated[ProviderCreate, Body()]) -> Response[Any]:
    return http.json_reply(
        200, letta.provider_json(providers.create(http.rt(), http.org_id(), req))
    )


@router.post("/providers/check")
def check_provider(req: Annotated[ProviderCheck, Body()]) -> Response[Any]:
    http.org_id()  # a key is checked for callers with one of their own
    providers.check(http.rt(), req)
    return http.json_reply(200, {"message": f"Valid api key for provider_type={req.provider_type}"})


@router.get("/providers/<provider_id>")
def retrieve_provider(provider_id: ProviderId) -> Response[Any]:
    found = providers.retrieve(http.rt(), http.org_id(), provider_id)
    return http.json_reply(200, letta.provider_json(found))


@router.patch("/providers/<provider_id>")
def modify_provider(
    provider_id: ProviderId, req: Annotated[ProviderUpdate, Body()]
) -> Response[Any]:
    found = providers.modify(http.rt(), http.org_id(), provider_id, req)
    return http.json_reply(200, letta.provider_json(found))


@router.post("/providers/<provider_id>/check")
def check_existing_provider(provider_id: ProviderId) -> Response[Any]:
    found = providers.check_existing(http.rt(), http.org_id(), provider_id)
    return http.json_reply(
        200, {"message": f"Valid api key for provider_type={found.provider_type}"}
    )


@router.delete("/providers/<provider_id>")
def delete_provider(provider_id: ProviderId) -> Response[Any]:
    providers.delete(http.rt(), http.org_id(), provider_id)
    return http.json_reply(200, {"message": f"Provider id={provider_id} successfully deleted"})
