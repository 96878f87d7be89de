"""A list route's page, parsed once (`cairn.api.paging.paged`): the four query parameters
are the route's own to Powertools (validated, described), and the route gets one Page."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from cairn.api.paging import paged
from cairn.services.pages import EVERYTHING, Page


def _app(seen: list[tuple[str, Page]]) -> APIGatewayHttpResolver:
    app = APIGatewayHttpResolver(enable_validation=True)

    @app.get("/things/<kind>")
    @paged(limit=20, order="asc")
    def list_things(kind: str, name: str | None = None, *, page: Page) -> dict[str, Any]:
        """The things of a kind."""
        seen.append((f"{kind}:{name}", page))
        return {"ok": True}

    @app.get("/all")
    @paged(limit=None)
    def list_all(*, page: Page) -> dict[str, Any]:
        seen.append(("all", page))
        return {"ok": True}

    return app


def _get(app: APIGatewayHttpResolver, path: str, query: dict[str, str]) -> dict[str, Any]:
    event = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "&".join(f"{k}={v}" for k, v in query.items()),
        "queryStringParameters": query or None,
        "headers": {},
        "requestContext": {
            "http": {"method": "GET", "path": path, "sourceIp": "127.0.0.1"},
            "stage": "$default",
        },
        "isBase64Encoded": False,
    }
    return app.resolve(event, None)


def test_the_route_gets_one_page_from_the_four_parameters_and_its_defaults() -> None:
    seen: list[tuple[str, Page]] = []
    app = _app(seen)
    assert _get(app, "/things/a", {})["statusCode"] == 200
    asked = {"limit": "5", "after": "x-1", "before": "x-9", "order": "desc", "name": "n"}
    assert _get(app, "/things/b", asked)["statusCode"] == 200
    assert _get(app, "/all", {})["statusCode"] == 200
    assert seen == [
        ("a:None", Page(limit=20, order="asc")),
        ("b:n", Page(limit=5, after="x-1", before="x-9", order="desc")),
        ("all", Page(limit=EVERYTHING.limit, order="desc")),  # no limit asked: all of it
    ]


def test_a_bad_page_parameter_is_a_422_naming_it() -> None:
    app = _app([])
    for query, field in (({"limit": "0"}, "limit"), ({"order": "up"}, "order")):
        answer = _get(app, "/things/a", query)
        assert answer["statusCode"] == 422
        assert [e["loc"] for e in json.loads(answer["body"])["detail"]] == [["query", field]]


def test_the_parameters_are_described_as_the_routes_own() -> None:
    app = _app([])
    document = json.loads(app.get_openapi_json_schema(title="t", version="1"))
    operation = document["paths"]["/things/{kind}"]["get"]
    params = {p["name"]: p for p in operation["parameters"]}
    assert set(params) == {"kind", "name", "after", "before", "limit", "order"}
    assert params["limit"]["schema"]["default"] == 20
    assert params["limit"]["schema"]["minimum"] == 1
    assert params["order"]["schema"]["default"] == "asc"
    assert operation["operationId"] == "list_things_things__kind__get"  # the route's name
