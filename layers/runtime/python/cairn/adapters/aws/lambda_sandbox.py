"""Custom tools on AWS: a Lambda function with no database or secret access, whose network
reaches nothing but the egress proxy (and that only with a pass this side signs)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cairn.tools import egress
from cairn.tools.sandbox import (
    Confined,
    SandboxRefused,
    SandboxRequest,
    SandboxResult,
    ServerLaunch,
)


class LambdaSandbox:
    def __init__(
        self,
        function_name: str,
        client: Any | None = None,
        *,
        proxy: str | None = None,
        key: Callable[[], bytes] | None = None,
    ) -> None:
        if client is None:
            import boto3

            client = boto3.client("lambda")
        self.function_name = function_name
        self._client = client
        # host:port of the egress proxy, and where the pass key comes from (read when a call
        # first needs it: most calls have no network and never fetch the secret).
        self.proxy, self._key = proxy, key

    def run(self, request: SandboxRequest) -> SandboxResult:
        payload = {**request.payload(), "timeout_seconds": request.timeout_seconds}
        try:
            if request.network and request.network.hosts and self.proxy and self._key:
                token = egress.issue(
                    self._key(),
                    request.network.organization_id,
                    request.network.hosts,
                    request.pass_seconds(),
                )
                host, _, port = self.proxy.rpartition(":")
                payload["proxy_url"] = egress.proxy_url(token, host, int(port))
            response = self._client.invoke(
                FunctionName=self.function_name, Payload=json.dumps(payload)
            )
            body = json.loads(response["Payload"].read() or b"{}")
        except Exception as err:  # the sandbox being unreachable is the tool failing, not the step
            return SandboxResult(False, f"the tool sandbox could not be reached: {err}")
        if response.get("FunctionError"):
            return SandboxResult(
                False, f"the tool sandbox failed: {body.get('errorMessage', body)}"
            )
        return SandboxResult.from_runner(body)

    @contextmanager
    def confined(self, launch: ServerLaunch) -> Iterator[Confined]:
        """A stdio MCP server would run on the API's or the step's own function, beside the
        server's credentials: refused (docs/tools.md says how to run one on AWS)."""
        raise SandboxRefused(
            "stdio MCP servers run only in the local stack's tool jail; on AWS, serve it over "
            "streamable HTTP (or SSE) and add it by its URL"
        )
        yield  # pragma: no cover  (a generator, for contextmanager)
