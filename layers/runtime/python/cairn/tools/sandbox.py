"""Running a custom tool's code away from the process that holds the credentials: the
contract every sandbox keeps.

Locally: a fresh interpreter in namespaces of its own (`tools/subprocess_sandbox.py`,
`tools/jail.py`). On AWS: a Lambda function without database or secret access, in a network
with no way out (`cairn.adapters.aws.lambda_sandbox`, `functions/sandbox`). Both run
the runner script (`tools/runner.py`) and answer in the same `SandboxResult`; errors and
timeouts are results, never exceptions. A call whose organization allows some hosts reaches
them, and only them, through the egress proxy (`tools/egress.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_MEMORY_BYTES = 512 * 1024 * 1024
OUTPUT_CHARS = 50_000  # stdout and stderr each, before the tool's own return limit
SCRATCH_BYTES = 64 * 1024 * 1024  # the tool's /tmp, and the largest file it may write
PROCESSES = 32


@dataclass(frozen=True)
class Network:
    """The hosts a call may reach: its organization's allow-list (none: no network)."""

    organization_id: str
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class SandboxRequest:
    source: str
    name: str
    args: dict[str, Any]
    tool_call_id: str  # the idempotency key a tool with outside effects can use
    agent_state: dict[str, Any] | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    network: Network | None = None
    # A proxy with the call's pass in it, made by the caller (the sandbox function on AWS).
    proxy_url: str | None = None
    # The agent's secrets (Letta's tool environment variables), for this call only.
    environment: dict[str, str] = field(default_factory=dict)

    def pass_seconds(self) -> float:
        return self.timeout_seconds + 30  # the pass outlives the call a little, no more

    def payload(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "name": self.name,
            "args": self.args,
            "tool_call_id": self.tool_call_id,
            "agent_state": self.agent_state,
            "environment": self.environment,
        }


@dataclass(frozen=True)
class SandboxResult:
    success: bool
    value: str
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    @classmethod
    def from_runner(cls, data: dict[str, Any]) -> SandboxResult:
        return cls(
            success=bool(data.get("success")),
            value=str(data.get("value") or ""),
            stdout=[data["stdout"]] if data.get("stdout") else [],
            stderr=[data["stderr"]] if data.get("stderr") else [],
        )


@dataclass(frozen=True)
class ServerLaunch:
    """A program that serves on its stdin and stdout (a stdio MCP server), started in the
    sandbox for one use: what it runs, its environment (its organization's, given to it
    whole), what it may reach and for how long."""

    argv: tuple[str, ...]
    environment: dict[str, str] = field(repr=False)
    network: Network | None
    timeout_seconds: float
    # A proxy with the use's pass in it, made by the caller (the sandbox function on AWS).
    proxy_url: str | None = field(default=None, repr=False)

    def pass_seconds(self) -> float:
        return self.timeout_seconds + 30


@dataclass(frozen=True)
class Confined:
    """How this host starts a launch in the sandbox: a command and its environment (which
    may carry the program's: never logged, never on a command line). Or, where the sandbox
    is elsewhere (the sandbox function on AWS), `remote`: one use made whole there, asked
    for and answered as JSON (`mcp_servers/client.py` says what)."""

    command: list[str]
    environment: dict[str, str] = field(repr=False)
    remote: Callable[[dict[str, Any]], dict[str, Any]] | None = field(default=None, repr=False)


class SandboxRefused(RuntimeError):
    """This sandbox cannot start the program; the message says why."""


class Sandbox(Protocol):
    def run(self, request: SandboxRequest) -> SandboxResult: ...

    def confined(self, launch: ServerLaunch) -> AbstractContextManager[Confined]:
        """The command that starts `launch` confined, valid while the context is open."""
        ...


Isolation = Literal["namespaces", "process"]
