"""A Lambda runtime loop that streams responses, for functions behind a function URL in
RESPONSE_STREAM mode.

Lambda's Python runtime sends a handler's return value whole; only Node.js streams
natively. Lambda lets any runtime stream through its Runtime API: the response is POSTed
with `Lambda-Runtime-Function-Response-Mode: streaming` and chunked transfer encoding,
its body a JSON prelude (status, headers, cookies), eight NUL bytes, then the body as it is
made. A failure after the body started goes in the `Lambda-Runtime-Function-Error-Type` and
`-Body` trailers. The function keeps Lambda's Python runtime (its interpreter, its layers)
and runs this loop in place of the runtime's own through `AWS_LAMBDA_EXEC_WRAPPER`
(functions/stream/bootstrap). Chosen over the Lambda Web Adapter: no extra binary layer, no
HTTP server and second hop inside the function, and the loop is ours to test
(tests/integration/test_lambda_stream.py drives it through a Runtime API stand-in).

The handler is `module.function` of $_HANDLER in $LAMBDA_TASK_ROOT, called with the event
and a context; it returns a `Streaming` (cairn.api.app): the head, then the body's pieces.
"""

from __future__ import annotations

import base64
import http.client
import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cairn import tracing

API_VERSION = "2018-06-01"
PRELUDE_END = b"\0" * 8
ERROR_TYPE, ERROR_BODY = "Lambda-Runtime-Function-Error-Type", "Lambda-Runtime-Function-Error-Body"


@dataclass
class Context:
    """What handlers and Powertools read of Lambda's context object."""

    aws_request_id: str
    invoked_function_arn: str
    deadline_ms: int
    function_name: str = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
    function_version: str = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
    memory_limit_in_mb: int = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "0") or 0)
    log_group_name: str = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
    log_stream_name: str = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.deadline_ms - int(time.time() * 1000))


class RuntimeAPI:
    def __init__(self, address: str) -> None:
        self.address = address
        self._next = http.client.HTTPConnection(address)  # kept open between invocations

    def next(self) -> tuple[dict[str, Any], Context]:
        self._next.request("GET", f"/{API_VERSION}/runtime/invocation/next")
        answer = self._next.getresponse()
        body = answer.read()
        headers = {k.lower(): v for k, v in answer.getheaders()}
        if trace := headers.get("lambda-runtime-trace-id"):
            os.environ["_X_AMZN_TRACE_ID"] = trace  # X-Ray's SDK reads it from here
        context = Context(
            aws_request_id=headers["lambda-runtime-aws-request-id"],
            invoked_function_arn=headers.get("lambda-runtime-invoked-function-arn", ""),
            deadline_ms=int(headers.get("lambda-runtime-deadline-ms") or 0),
        )
        return json.loads(body or b"{}"), context

    def stream(self, request_id: str, head: dict[str, Any], body: Iterable[bytes]) -> None:
        """The response, piece by piece as `body` makes them; a failure midway goes in the
        trailers (the client has had the status already)."""
        conn = http.client.HTTPConnection(self.address)  # closed after each response
        conn.putrequest("POST", f"/{API_VERSION}/runtime/invocation/{request_id}/response")
        conn.putheader("Lambda-Runtime-Function-Response-Mode", "streaming")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.putheader("Content-Type", "application/vnd.awslambda.http-integration-response")
        conn.putheader("Trailer", f"{ERROR_TYPE}, {ERROR_BODY}")
        conn.endheaders()
        trailers = b""
        try:
            _chunk(conn, json.dumps(head).encode() + PRELUDE_END)
            for piece in body:
                if piece:
                    _chunk(conn, piece)
        except OSError:  # the connection went: nobody to tell (the body is closed below)
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            conn.close()
            return
        except Exception as err:
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            error = base64.b64encode(json.dumps(_error(err)).encode()).decode()
            trailers = f"{ERROR_TYPE}: {type(err).__name__}\r\n{ERROR_BODY}: {error}\r\n".encode()
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
        try:
            conn.send(b"0\r\n" + trailers + b"\r\n")
            conn.getresponse().read()
        except OSError:
            print(traceback.format_exc(), file=sys.stderr, flush=True)
        finally:
            conn.close()

    def fail(self, path: str, err: BaseException) -> None:
        conn = http.client.HTTPConnection(self.address)
        body = json.dumps(_error(err)).encode()
        headers = {ERROR_TYPE: type(err).__name__}
        conn.request("POST", f"/{API_VERSION}/runtime/{path}", body=body, headers=headers)
        conn.getresponse().read()
        conn.close()


def _chunk(conn: http.client.HTTPConnection, data: bytes) -> None:
    conn.send(b"%x\r\n%s\r\n" % (len(data), data))


def _error(err: BaseException) -> dict[str, Any]:
    return {
        "errorMessage": str(err),
        "errorType": type(err).__name__,
        "stackTrace": traceback.format_exception(err),
    }


def load(spec: str, root: str) -> Callable[[dict[str, Any], Context], Any]:
    module_name, _, function = spec.rpartition(".")
    if root not in sys.path:
        sys.path.insert(0, root)
    handler: Callable[[dict[str, Any], Context], Any] = getattr(
        importlib.import_module(module_name), function
    )
    return handler


def serve(api: RuntimeAPI, handler: Callable[[dict[str, Any], Context], Any]) -> None:
    """One invocation: the next event, the handler, the streamed response."""
    event, context = api.next()
    try:
        try:
            head, body, _ = handler(event, context)
        except Exception as err:  # before any byte of the response: Lambda's own error path
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            api.fail(f"invocation/{context.aws_request_id}/error", err)
            return
        api.stream(context.aws_request_id, head, body)
    finally:
        # The turn's spans end while its body is sent: export them now, before asking for
        # the next event, when Lambda may freeze this environment (cairn/tracing.py).
        tracing.flush()


def main() -> None:
    api = RuntimeAPI(os.environ["AWS_LAMBDA_RUNTIME_API"])
    try:
        handler = load(os.environ["_HANDLER"], os.environ.get("LAMBDA_TASK_ROOT", "/var/task"))
    except Exception as err:
        print(traceback.format_exc(), file=sys.stderr, flush=True)
        api.fail("init/error", err)
        raise SystemExit(1) from err
    while True:
        serve(api, handler)


if __name__ == "__main__":
    main()
