"""The console (issue 38): static files shipped in the layer (`cairn/console/`), served by
the API itself at /console with no key (the page asks for one and keeps it in the tab's
session); every call it makes is an ordinary API call under that key."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.errors import NotFoundError

router = APIGatewayHttpRouter()
FILES = Path(__file__).resolve().parents[2] / "console"
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
NAME = re.compile(r"^[a-z][a-z0-9_-]*\.(html|js|css)$")
# Nothing but our own files runs or loads; images only from the page's own data.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data: blob:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@cache
def _file(name: str) -> str:
    if not NAME.match(name) or not (FILES / name).is_file():
        raise NotFoundError(f"No console file {name}")
    return (FILES / name).read_text()


def _served(name: str) -> Response[Any]:
    body = _file(name)
    kind = TYPES[Path(name).suffix]
    return Response(status_code=200, content_type=kind, body=body, headers=dict(HEADERS))


@router.get("/console")
def console_page() -> Response[Any]:
    return _served("index.html")


@router.get("/console/")
def console_page_slash() -> Response[Any]:
    return _served("index.html")


@router.get("/console/<name>")
def console_file(name: str) -> Response[Any]:
    return _served(name)
