"""How long a model call may hold its worker (llm.patience, llm.deadline): a server that
never answers, one that stops midway and one that crawls a byte at a time are each cut at
their wait, through the real SDKs (OpenAI's and Anthropic's over httpx2, Google's over
httpx), where per-read timeouts alone would wait for ever or for minutes."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import httpcore2._sync.http11
import pytest

from cairn.config import Settings
from cairn.domain import LLMConfig
from cairn.domain.ids import new_id
from cairn.domain.messages import Message, TextContent
from cairn.llm import deadline
from cairn.llm.clients import client_for
from cairn.llm.types import LLMError, LLMRequest
from cairn.outbound import KEEPALIVE_SECONDS
from tests.fakes.llm_server import FakeLLM

# A body the server promises and then sends slowly or never: 10,000 bytes at one every
# 0.2 s would take over half an hour.
PROMISED = 10_000


@dataclass
class Stalling:
    """A raw HTTP server: `mode` "silent" (reads the request, says nothing), "stops" (the
    headers, a few bytes, then nothing) or "crawls" (the headers, then a byte every 0.2 s)."""

    mode: str
    url: str = ""

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self._listener.settimeout(0.2)
        while not self._done.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            if self.mode != "silent":
                head = (
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n{" % PROMISED
                )
                conn.sendall(head)
            while not self._done.wait(0.2):
                if self.mode == "crawls":
                    try:
                        conn.sendall(b" ")
                    except OSError:
                        return

    def close(self) -> None:
        self._done.set()
        self._listener.close()


@pytest.fixture(params=["silent", "stops", "crawls"])
def stalling(request: pytest.FixtureRequest) -> Iterator[Stalling]:
    server = Stalling(request.param)
    yield server
    server.close()


def ask(kind: str) -> LLMRequest:
    config = LLMConfig(model="m", model_endpoint_type=kind, context_window=32000)
    said = Message(
        organization_id=new_id("org"),
        agent_id=new_id("agent"),
        role="user",
        content=[TextContent(text="hi")],
    )
    return LLMRequest(config=config, messages=[said])


@pytest.mark.parametrize("kind", ["openai", "anthropic", "google_ai"])
def test_a_model_that_hangs_stops_or_crawls_is_cut_at_its_wait(
    stalling: Stalling, kind: str
) -> None:
    settings = Settings(
        openai_api_key="sk-test",
        openai_base_url=f"{stalling.url}/v1",
        anthropic_api_key="ant-test",
        anthropic_base_url=stalling.url,
        gemini_api_key="gm-test",
        gemini_base_url=stalling.url,
        llm_first_byte_seconds=1.0,
        llm_idle_seconds=1.0,
        llm_timeout_seconds=3.0,
        llm_max_retries=0,
    )
    started = time.monotonic()
    with pytest.raises(LLMError) as failed, deadline.bounded(settings.llm_timeout_seconds):
        client_for(ask(kind).config, settings).complete(ask(kind))
    took = time.monotonic() - started
    assert failed.value.kind == "timeout", failed.value
    # Per read, the crawl would run for half an hour; bounded, it ends at the call's end
    # (3 s), a hang or a stop at its wait (1 s). A generous margin for a loaded machine.
    assert took < 30, took
    why = {
        "silent": "CAIRN_LLM_FIRST_BYTE_SECONDS",
        "stops": "CAIRN_LLM_IDLE_SECONDS",
        "crawls": "CAIRN_LLM_TIMEOUT_SECONDS",
    }[stalling.mode]
    assert why in str(failed.value), failed.value
    # The call's own bound is the model's failure, not the caller's: nothing to hand on.
    assert not isinstance(failed.value, deadline.DeadlineReached)


def test_the_earlier_of_the_callers_time_and_the_calls_bound_decides_who_failed() -> None:
    with deadline.within(10), deadline.bounded(1):
        assert isinstance(deadline.timed_out(), deadline.CallTimedOut)
        assert not deadline.timed_out().transient  # type: ignore[union-attr]
    with deadline.bounded(10), deadline.within(1):
        assert isinstance(deadline.timed_out(), deadline.DeadlineReached)
    with deadline.bounded(5):
        left = deadline.request_options()
        assert left["max_retries"] == 0 and 4 < left["timeout"] <= 5
    assert deadline.timed_out() is None and deadline.request_options() == {}


def test_a_url_anyone_gave_is_fetched_within_its_time_for_the_whole_transfer() -> None:
    """outbound.fetch_bytes (images in messages, fetch_webpage): a server sending a byte
    every 0.2 s held a request for 98 s under a 10 s timeout, which httpx applies per read."""
    from cairn import outbound

    crawl = Stalling("crawls")
    try:
        started = time.monotonic()
        with pytest.raises(outbound.FetchFailed, match=r"did not finish sending within 1\.5 s"):
            outbound.fetch_bytes(
                crawl.url + "/slow.png",
                outbound.networks("127.0.0.0/8"),
                limit=1 << 20,
                timeout=1.5,
            )
        assert time.monotonic() - started < 15  # per read: over half an hour
    finally:
        crawl.close()


@pytest.mark.parametrize(("idle", "connections"), [(6.0, 1), (KEEPALIVE_SECONDS + 1, 2)])
def test_a_models_connection_is_kept_between_calls_seconds_apart(
    monkeypatch: pytest.MonkeyPatch, idle: float, connections: int
) -> None:
    """httpx keeps an idle connection 5 s; a chat's messages mostly come further apart, and
    against a provider each new connection is a TLS handshake. A call 6 s after the last one
    goes over the same connection; one past KEEPALIVE_SECONDS opens another. (httpcore's
    clock is moved on, not waited for.)"""
    with FakeLLM() as fake:
        accepted: list[Any] = []
        server: Any = fake._server
        serve = server.process_request

        def counted(request: Any, address: Any) -> None:
            accepted.append(address)
            serve(request, address)

        monkeypatch.setattr(server, "process_request", counted)
        settings = Settings(
            openai_api_key="sk-test", openai_base_url=f"{fake.base_url}/v1", llm_max_retries=0
        )
        model = client_for(ask("openai").config, settings)
        later = [0.0]
        clock = SimpleNamespace(monotonic=lambda: time.monotonic() + later[0])
        monkeypatch.setattr(httpcore2._sync.http11, "time", clock)
        fake.reply("one")
        model.complete(ask("openai"))
        later[0] = idle
        fake.reply("two")
        assert model.complete(ask("openai")).text == "two"
    assert len(accepted) == connections


class Flooding:
    """A raw HTTP server answering 200 with a body it never stops sending, quickly; it
    counts the bytes it got out before the client hung up."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.sent = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._flood, args=(conn,), daemon=True).start()

    def _flood(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: 268435456\r\n\r\n[" + b" " * 65535
            )
            piece = b" " * (1 << 20)
            while self.sent < 256 << 20:
                try:
                    conn.sendall(piece)
                except OSError:  # the client stopped reading
                    return
                self.sent += len(piece)

    def close(self) -> None:
        self._listener.close()


@pytest.mark.parametrize("call", ["model", "embeddings"])
def test_an_organizations_server_answering_without_end_is_cut_at_the_most_read(
    monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    """An answer from a URL an organization gave is read to outbound.MAX_ANSWER_BYTES at
    most (here 2 MB), whatever length it announces: a server sending 256 MB as fast as
    it can would otherwise hold the worker's memory. Its call fails as a connection error
    that says why."""
    from cairn import outbound
    from cairn.embeddings.providers import OpenAIEmbedder

    monkeypatch.setattr(outbound, "MAX_ANSWER_BYTES", 2 << 20)
    flood = Flooding()
    try:
        settings = Settings(outbound_networks="127.0.0.0/8", llm_max_retries=0)
        with pytest.raises(LLMError) as failed:
            if call == "model":  # a keyless server the agent names: the guarded client
                request = ask("vllm")
                config = request.config.model_copy(update={"model_endpoint": f"{flood.url}/v1"})
                client_for(config, settings).complete(request)
            else:
                import openai

                sdk = openai.OpenAI(
                    api_key="sk-own",
                    base_url=f"{flood.url}/v1",
                    max_retries=0,
                    http_client=outbound.http_client(
                        outbound.networks("127.0.0.0/8"), 30.0, "httpx2"
                    ),
                )
                OpenAIEmbedder(sdk, "text-embedding-3-small", 1536).embed(["hello"])
    finally:
        flood.close()
    assert failed.value.kind == "connection", failed.value
    assert "passed 2,097,152 bytes" in str(failed.value)
    # what it got out before the client hung up: the most read and the sockets' buffers
    assert flood.sent < 64 << 20, flood.sent
