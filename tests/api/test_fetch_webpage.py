"""Letta's fetch_webpage built-in through the whole API, against pages a local server serves:
HTML as text, redirects followed, long pages cut, what is not text refused, and the
outbound-address policy on every connection, redirects included."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.api.test_custom_tools import tool_return
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
PAGES = {
    "/article": (
        "text/html; charset=utf-8",
        b"<html><head><title>T</title><script>evil()</script></head><body>"
        b"<h1>Cairns</h1><p>Stacked <b>stones</b> mark a trail.</p></body></html>",
    ),
    "/long": ("text/plain", b"x" * 100_000),
    "/image": ("image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100),
}


@pytest.fixture
def site() -> Iterator[str]:
    hits: list[str] = []

    class Serve(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            if self.path == "/moved":
                self.send_response(302)
                self.send_header("Location", "/article")
                self.end_headers()
                return
            if self.path == "/to-metadata":
                self.send_response(302)
                self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
                self.end_headers()
                return
            kind, body = PAGES.get(self.path, ("text/plain", b""))
            self.send_response(200 if self.path in PAGES else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Serve)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def fetched(stack: Stack, url: str) -> object:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM, tools=["fetch_webpage"])  # type: ignore[arg-type]
    stack.fake.reply("", call("fetch_webpage", url=url))
    stack.fake.reply("read it")
    return tool_return(client.agents.messages.create(agent.id, input=f"read {url}"))


def test_a_page_comes_back_as_text_and_a_redirect_is_followed(stack: Stack, site: str) -> None:
    ret = fetched(stack, f"{site}/moved")
    assert ret.status == "success"  # type: ignore[attr-defined]
    text = ret.tool_return  # type: ignore[attr-defined]
    assert "# Cairns" in text and "Stacked **stones** mark a trail." in text
    assert "evil()" not in text and "<p>" not in text


def test_a_long_page_is_cut_and_what_is_not_text_is_refused(stack: Stack, site: str) -> None:
    long = fetched(stack, f"{site}/long")
    assert long.status == "success" and len(long.tool_return) == 40_000  # type: ignore[attr-defined]
    image = fetched(stack, f"{site}/image")
    assert image.status == "error" and "image/png" in image.tool_return  # type: ignore[attr-defined]
    missing = fetched(stack, f"{site}/nowhere")
    assert missing.status == "error" and "404" in missing.tool_return  # type: ignore[attr-defined]


def test_a_redirect_to_a_private_address_is_refused(stack: Stack, site: str) -> None:
    ret = fetched(stack, f"{site}/to-metadata")
    assert ret.status == "error" and "169.254.169.254" in ret.tool_return  # type: ignore[attr-defined]


def test_a_private_address_is_refused_unless_the_operator_opened_it(
    db: Database, site: str
) -> None:
    with make_stack(db, outbound_networks="") as closed:
        ret = fetched(closed, f"{site}/article")
    assert ret.status == "error" and "public addresses" in ret.tool_return  # type: ignore[attr-defined]
