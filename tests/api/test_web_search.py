"""Letta's web_search built-in through the whole API, Exa's own SDK against a local server
speaking Exa's /search: the agent's EXA_API_KEY secret first, then the server's, a clear
error without either; Letta's answer shape."""

from __future__ import annotations

import ast
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.api.test_custom_tools import tool_return
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


@pytest.fixture
def exa() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    class Serve(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "key": self.headers.get("x-api-key"), "body": body})
            answer = {
                "requestId": "r1",
                "resolvedSearchType": "neural",
                "results": [
                    {
                        "id": "https://stones.example/cairns",
                        "url": "https://stones.example/cairns",
                        "title": "Cairns",
                        "author": "Ada",
                        "publishedDate": "2026-01-02",
                        "text": "Full text.",
                        "highlights": ["Stacked stones mark trails."],
                        "highlightScores": [0.9],
                        "summary": "About cairns.",
                    }
                ],
            }
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Serve)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def searched(stack: Stack, **agent: Any) -> Any:
    client = stack.client()
    made = client.agents.create(llm_config=LLM, tools=["web_search"], **agent)  # type: ignore[arg-type]
    stack.fake.reply(
        "", call("web_search", query="cairns", num_results=3, include_domains=["stones.example"])
    )
    stack.fake.reply("found")
    return tool_return(client.agents.messages.create(made.id, input="search"))


def test_the_agents_key_is_used_and_the_answer_is_letta_s(
    db: Database, exa: tuple[str, list[dict[str, Any]]]
) -> None:
    url, seen = exa
    with make_stack(db, exa_base_url=url, exa_api_key="server-key") as stack:
        ret = searched(stack, secrets={"EXA_API_KEY": "agent-key"})
    assert ret.status == "success"
    shown = ast.literal_eval(ret.tool_return)
    assert shown["query"] == "cairns"
    assert shown["results"] == [
        {
            "title": "Cairns",
            "url": "https://stones.example/cairns",
            "published_date": "2026-01-02",
            "author": "Ada",
            "highlights": ["Stacked stones mark trails."],
            "summary": "About cairns.",
        }
    ]
    (request,) = seen
    assert request["path"] == "/search" and request["key"] == "agent-key"
    assert request["body"]["numResults"] == 3 and request["body"]["includeDomains"] == [
        "stones.example"
    ]


def test_the_servers_key_serves_agents_without_one_and_none_is_a_clear_error(
    db: Database, exa: tuple[str, list[dict[str, Any]]]
) -> None:
    url, seen = exa
    with make_stack(db, exa_base_url=url, exa_api_key="server-key") as stack:
        assert searched(stack).status == "success"
    assert seen[-1]["key"] == "server-key"
    with make_stack(db, exa_base_url=url) as keyless:
        ret = searched(keyless)
    assert ret.status == "error" and "EXA_API_KEY is not set" in ret.tool_return
    assert len(seen) == 1
