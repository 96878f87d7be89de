"""CORS for browser clients: an allowed origin's preflight is answered without a key, its
answers carry the origin; anyone else's preflight is 403 and its answers carry nothing."""

from __future__ import annotations

import httpx

from cairn.store.db import Database
from tests.api.conftest import make_stack

APP = "https://console.example.com"


def test_an_allowed_origin_gets_its_preflight_and_headers(db: Database) -> None:
    with make_stack(db, cors_origins=f"{APP}, http://localhost:5173") as stack:
        preflight = httpx.options(
            f"{stack.url}/v1/agents/",
            headers={
                "Origin": APP,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        assert preflight.status_code == 204  # no key asked for
        assert preflight.headers["access-control-allow-origin"] == APP
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert "authorization" in preflight.headers["access-control-allow-headers"]
        listed = httpx.get(
            f"{stack.url}/v1/agents/",
            headers={"Origin": APP, "Authorization": f"Bearer {stack.key}"},
        )
        assert listed.status_code == 200
        assert listed.headers["access-control-allow-origin"] == APP
        assert listed.headers["vary"] == "Origin"
        refused = httpx.get(f"{stack.url}/v1/agents/", headers={"Origin": APP})
        assert refused.status_code == 401  # still a key for the request itself...
        assert refused.headers["access-control-allow-origin"] == APP  # ...readable by it
        other = httpx.options(
            f"{stack.url}/v1/agents/",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
        )
        assert other.status_code == 403 and "access-control-allow-origin" not in other.headers
        plain = httpx.get(
            f"{stack.url}/v1/agents/",
            headers={"Origin": "https://evil.example", "Authorization": f"Bearer {stack.key}"},
        )
        assert plain.status_code == 200 and "access-control-allow-origin" not in plain.headers


def test_no_origin_is_allowed_by_default(db: Database) -> None:
    with make_stack(db) as stack:
        preflight = httpx.options(
            f"{stack.url}/v1/agents/",
            headers={"Origin": "http://localhost:5173", "Access-Control-Request-Method": "GET"},
        )
        assert preflight.status_code == 403
