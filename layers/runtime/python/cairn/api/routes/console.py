"""The console (issue 38): static files shipped in the layer (`cairn/console/`), served by
the API itself at /console with no key (the page asks for one and keeps it in the tab's
session); every call it makes is an ordinary API call under that key."""

from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.errors import not_found

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
    # Asked again each time, answered 304 while the file is the same (its ETag): a new
    # release is seen at once, and an unchanged console costs a visit no file bytes.
    "Cache-Control": "no-cache",
}


@cache
def _file(name: str) -> tuple[str, str]:
    """The file's text and its ETag (a hash of it)."""
    if not NAME.match(name) or not (FILES / name).is_file():
        raise not_found(f"No console file {name}")
    body = (FILES / name).read_text()
    return body, '"' + hashlib.sha256(body.encode()).hexdigest()[:32] + '"'


def _served(name: str) -> Response[Any]:
    body, etag = _file(name)
    headers = {**HEADERS, "ETag": etag}
    asked = (router.current_event.headers or {}).get("if-none-match") or ""
    if etag in (tag.strip().removeprefix("W/") for tag in asked.split(",")):
        return Response(status_code=304, body="", headers=headers)
    kind = TYPES[Path(name).suffix]
    return Response(status_code=200, content_type=kind, body=body, headers=headers)


@router.get("/console")
def console_page() -> Response[Any]:
    return _served("index.html")


@router.get("/console/")
def console_page_slash() -> Response[Any]:
    return _served("index.html")


@router.get("/console/<name>")
def console_file(name: str) -> Response[Any]:
    return _served(name)
