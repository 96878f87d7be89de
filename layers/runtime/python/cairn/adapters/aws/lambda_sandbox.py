"""Custom tools and stdio MCP servers on AWS: a Lambda function with no database or secret
access, whose network reaches nothing but the egress proxy (and that only with a pass this
side signs)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cairn.tools import egress
from cairn.tools.sandbox import (
    Confined,
    Network,
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
            self._pass(payload, request.network, request.pass_seconds())
            body = self._invoke(payload)
        except Exception as err:  # the sandbox being unreachable is the tool failing, not the step
            return SandboxResult(False, f"the tool sandbox could not be reached: {err}")
        if "errorMessage" in body:
            return SandboxResult(False, f"the tool sandbox failed: {body['errorMessage']}")
        return SandboxResult.from_runner(body)

    @contextmanager
    def confined(self, launch: ServerLaunch) -> Iterator[Confined]:
        """A stdio MCP server cannot run here (the API's or the step's function holds the
        server's credentials): each use is made whole in the sandbox function, which starts
        the program, speaks to it and stops it (`functions/sandbox`)."""

        def use(asked: dict[str, Any]) -> dict[str, Any]:
            payload: dict[str, Any] = {
                "serve": {
                    **asked,
                    "argv": list(launch.argv),
                    "environment": launch.environment,
                    "timeout_seconds": launch.timeout_seconds,
                }
            }
            try:
                self._pass(payload, launch.network, launch.pass_seconds())
                body = self._invoke(payload)
            except Exception as err:
                return {"error": f"the tool sandbox could not be reached: {err}"}
            if "errorMessage" in body:
                return {"error": f"the tool sandbox failed: {body['errorMessage']}"}
            return body

        yield Confined([], {}, remote=use)

    def _pass(self, payload: dict[str, Any], network: Network | None, seconds: float) -> None:
        """The egress proxy's address with a pass for the organization's hosts, if it has
        any and the deployment has the proxy (else the call has no network)."""
        if network and network.hosts and self.proxy and self._key:
            token = egress.issue(self._key(), network.organization_id, network.hosts, seconds)
            host, _, port = self.proxy.rpartition(":")
            payload["proxy_url"] = egress.proxy_url(token, host, int(port))

    def _invoke(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The function's answer; a failed invocation's as {"errorMessage": ...}."""
        response = self._client.invoke(FunctionName=self.function_name, Payload=json.dumps(payload))
        body = json.loads(response["Payload"].read() or b"{}")
        if response.get("FunctionError"):
            return {
                "errorMessage": body.get("errorMessage", body) if isinstance(body, dict) else body
            }
        return dict(body)
