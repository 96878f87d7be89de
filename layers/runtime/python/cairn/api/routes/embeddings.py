"""Letta's embeddings family: the estimated size of the organization's archival embeddings."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http
from cairn.services import passages

router = APIGatewayHttpRouter()


@router.get("/embeddings/total_storage_size")
def total_storage_size(
    storage_unit: Annotated[str | None, Header(alias="storage-unit")] = None,
) -> Response[Any]:
    # Letta reads the header as `storage_unit` (its OpenAPI says `storage-unit`): either.
    unit = storage_unit or http.header("storage_unit") or "GB"
    return http.json_reply(200, passages.embeddings_size(http.rt(), http.org_id(), unit))
