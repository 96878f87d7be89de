"""HTTP on 127.0.0.1 -> payload v2 events for `functions/stream`, the API as its function URL
serves it: every route, and streams sent piece by piece (chunked, unbuffered)."""

from __future__ import annotations

import base64
import json
import logging
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from cairn.adapters.local.lambdas import invoke_pooled
from cairn.domain.constants import MAX_REQUEST_BYTES, too_large

if TYPE_CHECKING:
    from cairn.api.app import Streaming

logger = logging.getLogger(__name__)

_TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded")
# The API's execution environments: requests run side by side, each environment one at a
# time, as Lambda's would; a slow request holds its own and never health or other clients.
API_ENVIRONMENTS = 4


def to_event(method: str, target: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The event API Gateway would send for this request."""
    url = urlsplit(target)
    # API Gateway hands the path over decoded (`/v1/folders/name/Trail notes` for
    # `Trail%20notes`; aws-powertools/powertools-lambda-python#1098 shows such an event), and
    # the routes' parameters are read from it as they are.
    path = unquote(url.path)
    lowered = {k.lower(): v for k, v in headers.items()}
    content_type = lowered.get("content-type", "")
    is_text = not body or content_type.startswith(_TEXT_TYPES)
    query: dict[str, list[str]] = {}
    for key, value in parse_qsl(url.query, keep_blank_values=True):
        query.setdefault(key, []).append(value)
    now = time.time()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": url.query,
        "headers": lowered,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": lowered.get("host", "127.0.0.1"),
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": not is_text,
    }
    if query:
        # API Gateway joins repeated parameters with commas here; rawQueryString keeps them all.
        event["queryStringParameters"] = {k: ",".join(v) for k, v in query.items()}
    if body:
        try:
            event["body"] = body.decode() if is_text else None
        except UnicodeDecodeError:  # not text after all: passed on as bytes, as API Gateway does
            is_text = False
        if not is_text:
            event["body"] = base64.b64encode(body).decode()
            event["isBase64Encoded"] = True
    return event


# The most of an oversized body the bridge reads to answer 413 (API Gateway refuses bodies
# over 10 MB itself); past it the connection is closed.
DRAIN_BYTES = 256 * 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Buffered: headers and body leave in one send (the handler flushes after each request)
    # instead of two, each waking the client. A body larger than the buffer still goes out
    # in pieces, and with Nagle on the client's delayed ACK would add ~40 ms to those.
    wbufsize = 64 * 1024
    disable_nagle_algorithm = True

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_REQUEST_BYTES:
            # Read and dropped, never held: the client reads our answer only once it has
            # sent its body, and closing on unread bytes resets the connection, losing the
            # 413 (a 30 MB import saw a reset). Past DRAIN_BYTES it is closed anyway.
            left = length if length <= DRAIN_BYTES else 0
            while left > 0 and (chunk := self.rfile.read(min(left, 1 << 16))):
                left -= len(chunk)
            self.close_connection = True
            self._reply({"statusCode": 413, "body": json.dumps({"detail": too_large(length)})})
            return
        body = self.rfile.read(length) if length else b""
        event = to_event(self.command, self.path, dict(self.headers.items()), body)
        try:
            reply: Streaming = invoke_pooled("stream", event, API_ENVIRONMENTS)
        except Exception:
            logger.exception("api handler failed")
            self._reply(
                {"statusCode": 500, "body": json.dumps({"detail": "An unknown error occurred"})}
            )
            return
        self._head(reply.head)
        if not reply.streamed:
            data = b"".join(reply.body)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for piece in reply.body:  # each piece leaves as it is made
                if piece:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client went away; closing the body hands its run to the queue
            self.close_connection = True
        finally:
            close = getattr(reply.body, "close", None)
            if close is not None:
                close()

    def _reply(self, result: dict[str, Any]) -> None:
        payload = result.get("body") or ""
        data = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode()
        self._head(result)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _head(self, result: dict[str, Any]) -> None:
        self.send_response(int(result.get("statusCode", 200)))
        headers = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
        headers.setdefault("content-type", "application/json")
        for key, value in headers.items():
            self.send_header(key, value)
        for cookie in result.get("cookies") or ():
            self.send_header("set-cookie", cookie)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def __getattr__(self, name: str) -> Any:
        # Any other method (TRACE, PROPFIND...) goes to the API as well, which answers 405
        # JSON naming the allowed ones, instead of the standard library's 501 HTML page.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def log_message(self, format: str, *args: Any) -> None:
        logger.info("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    # Many clients connect at once (SDK pools, load tests); the default backlog of 5 resets them.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # a client that left (a stream closed midway): nothing to report
        super().handle_error(request, client_address)


def make_server(host: str, port: int) -> ThreadingHTTPServer:
    server = _Server((host, port), _Handler)
    server.daemon_threads = True
    return server
