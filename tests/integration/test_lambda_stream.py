"""The streaming function through the protocol Lambda speaks to it: its `bootstrap` exec
wrapper started as Lambda starts it, talking to a stand-in of Lambda's Runtime API, which
records each chunk of the streamed response as it arrives."""

from __future__ import annotations

import base64
import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cairn.adapters.aws.lambda_stream import PRELUDE_END, RuntimeAPI
from cairn.domain import Organization, User
from cairn.store import tenancy
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM
from tests.fakes.otlp_receiver import OtlpReceiver
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "/2018-06-01/runtime"


@dataclass
class Posted:
    headers: dict[str, str]
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    trailers: dict[str, str] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def body(self) -> bytes:
        return b"".join(c for _, c in self.chunks)

    def prelude(self) -> tuple[dict[str, Any], bytes]:
        head, _, rest = self.body.partition(PRELUDE_END)
        return json.loads(head), rest


class RuntimeStandIn:
    """Lambda's Runtime API as a runtime sees it: events from /next, responses (streamed
    with chunked transfer encoding and trailers) and errors posted back."""

    def __init__(self) -> None:
        self.events: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        self.posted: dict[str, Posted] = {}
        self.errors: dict[str, dict[str, Any]] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host!s}:{port}"

    def invoke(self, event: dict[str, Any]) -> str:
        request_id = str(uuid.uuid4())
        self.posted[request_id] = Posted({})
        self.events.put((request_id, event))
        return request_id

    def wait(self, request_id: str, timeout: float = 60) -> Posted:
        posted = self.posted[request_id]
        assert posted.done.wait(timeout), f"no response to {request_id}"
        return posted

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                assert self.path == f"{PREFIX}/invocation/next", self.path
                request_id, event = stand_in.events.get()
                data = json.dumps(event).encode()
                self.send_response(200)
                self.send_header("Lambda-Runtime-Aws-Request-Id", request_id)
                self.send_header(
                    "Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 60_000)
                )
                arn = "arn:aws:lambda:us-east-1:000000000000:function:cairn-stream"
                self.send_header("Lambda-Runtime-Invoked-Function-Arn", arn)
                self.send_header(
                    "Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000"
                )
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                parts = self.path.removeprefix(f"{PREFIX}/").split("/")
                if parts[0] == "invocation" and parts[2] == "response":
                    self._response(stand_in.posted[parts[1]])
                else:  # invocation/<id>/error or init/error
                    length = int(self.headers.get("Content-Length") or 0)
                    key = parts[1] if parts[0] == "invocation" else "init"
                    stand_in.errors[key] = json.loads(self.rfile.read(length))
                    self._accepted()
                    if key in stand_in.posted:
                        stand_in.posted[key].done.set()

            def _response(self, posted: Posted) -> None:
                posted.headers = {k.lower(): v for k, v in self.headers.items()}
                assert posted.headers["transfer-encoding"] == "chunked"
                while True:
                    size = int(self.rfile.readline().strip(), 16)
                    if size == 0:
                        break
                    posted.chunks.append((time.monotonic(), self.rfile.read(size)))
                    assert self.rfile.readline() == b"\r\n"
                while (line := self.rfile.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode().partition(":")
                    posted.trailers[name.strip().lower()] = value.strip()
                self._accepted()
                posted.done.set()

            def _accepted(self) -> None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler


def url_event(method: str, path: str, key: str, body: dict[str, Any] | None = None) -> dict:
    """A function URL's event (payload v2)."""
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {
            "authorization": f"Bearer {key}",
            "content-type": "application/json",
            "host": "abc.lambda-url.us-east-1.on.aws",
        },
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "abc",
            "domainName": "abc.lambda-url.us-east-1.on.aws",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "test",
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": "24/Nov/2026:06:00:00 +0000",
            "timeEpoch": int(time.time() * 1000),
        },
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
    }


@pytest.fixture
def stand_in() -> Iterator[RuntimeStandIn]:
    api = RuntimeStandIn()
    yield api
    api.close()


def test_the_stream_function_streams_through_the_runtime_api(
    db: Database, pg_dsn: str, stand_in: RuntimeStandIn, tmp_path: Path
) -> None:
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="stream"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="ada"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="test")
    with FakeLLM() as fake, OtlpReceiver() as traces:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "AWS_"))}
        env.update(
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            AWS_LAMBDA_RUNTIME_API=stand_in.address,
            AWS_LAMBDA_FUNCTION_NAME="cairn-stream",
            AWS_LAMBDA_FUNCTION_MEMORY_SIZE="1024",
            AWS_DEFAULT_REGION="us-east-1",
            _HANDLER="handler.handler",
            LAMBDA_TASK_ROOT=str(ROOT / "functions" / "stream"),
            DATABASE_URL=pg_dsn,
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=f"{fake.base_url}/v1",
            CAIRN_DATA_DIR=str(tmp_path),
            # Spans exported only when flushed (the batch timer never fires in this test):
            # those of a streamed turn must leave before the loop asks for the next event.
            OTEL_EXPORTER_OTLP_ENDPOINT=traces.endpoint,
            OTEL_BSP_SCHEDULE_DELAY="600000",
        )
        # As Lambda starts it: the exec wrapper, in place of the runtime's own loop.
        bootstrap = str(ROOT / "functions" / "stream" / "bootstrap")
        proc = subprocess.Popen(
            [bootstrap], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            created = stand_in.wait(
                stand_in.invoke(
                    url_event(
                        "POST",
                        "/v1/agents/",
                        key,
                        {
                            "llm_config": {
                                "model": "gpt-fake-mini",
                                "model_endpoint_type": "openai",
                                "context_window": 32000,
                            }
                        },
                    )
                )
            )
            head, body = created.prelude()
            assert head["statusCode"] == 200, body
            agent_id = json.loads(body)["id"]
            assert created.headers["lambda-runtime-function-response-mode"] == "streaming"
            assert created.headers["content-type"] == (
                "application/vnd.awslambda.http-integration-response"
            )

            text = "Steeping now; the tea will be ready in three minutes."
            fake.reply(text, chunk_delay=0.1)
            streamed = stand_in.wait(
                stand_in.invoke(
                    url_event(
                        "POST",
                        f"/v1/agents/{agent_id}/messages/stream",
                        key,
                        {"input": "tea?", "stream_tokens": True},
                    )
                )
            )
            # The turn's step ended while its answer streamed; the loop flushed it before
            # waiting on the next event (no further invocation comes here).
            eventually(lambda: traces.named("step"), timeout=20)
        finally:
            proc.kill()
            output = proc.communicate()[0]
    head, sse = streamed.prelude()
    assert head["statusCode"] == 200, output
    assert head["headers"]["Content-Type"].startswith("text/event-stream")
    assert not streamed.trailers
    frames = [
        json.loads(line[6:]) for line in sse.decode().split("\n\n") if line.startswith("data: {")
    ]
    assert "".join(f.get("content") or "" for f in frames) == text
    assert sse.endswith(b"data: [DONE]\n\n")
    # The chunks came as the model wrote: the first piece a second before the end.
    timed = [(t, c) for t, c in streamed.chunks if b'"assistant_message"' in c]
    assert len(timed) > 5
    assert streamed.chunks[-1][0] - timed[0][0] > 1.0


def test_a_failure_midway_goes_in_the_trailers(stand_in: RuntimeStandIn) -> None:
    def body() -> Iterator[bytes]:
        yield b"data: {}\n\n"
        raise RuntimeError("the database went away")

    request_id = str(uuid.uuid4())
    stand_in.posted[request_id] = Posted({})
    RuntimeAPI(stand_in.address).stream(request_id, {"statusCode": 200}, body())
    posted = stand_in.wait(request_id)
    head, rest = posted.prelude()
    assert head == {"statusCode": 200} and rest == b"data: {}\n\n"
    assert posted.trailers["lambda-runtime-function-error-type"] == "RuntimeError"
    error = json.loads(base64.b64decode(posted.trailers["lambda-runtime-function-error-body"]))
    assert error["errorMessage"] == "the database went away"
