"""Running a custom tool's code away from the process that holds the credentials.

Locally: a fresh `python -I` subprocess with an empty environment, CPU-time and memory
limits and a wall-clock timeout. On AWS: a Lambda function without VPC, database or secret
access (`cairn.orchestration.lambda_sandbox`). Both run `RUNNER` and answer in the same
`SandboxResult`; errors and timeouts are results, never exceptions.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_MEMORY_BYTES = 512 * 1024 * 1024
OUTPUT_CHARS = 50_000  # stdout and stderr each, before the tool's own return limit
_MARK = "\x1e__cairn_result__"

# Runs inside the sandbox: reads the request as JSON on stdin, runs the tool with stdout and
# stderr captured, and prints the result after a marker line (the tool may print anything).
RUNNER = r"""
import contextlib, io, json, os, sys, traceback
if os.environ.get("CAIRN_SANDBOX_LIMITS"):
    # Limits set by the child itself, before any tool code runs (a preexec_fn is unsafe in
    # a threaded parent).
    import resource
    cpu, memory = (int(v) for v in os.environ["CAIRN_SANDBOX_LIMITS"].split(","))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
request = json.loads(sys.stdin.read())


class _Record:
    # Letta hands tools pydantic objects (`agent_state.memory.get_block("human").value`);
    # item access keeps tools written for plain dicts working too.
    def __init__(self, fields):
        self.__dict__.update(fields)

    def __getitem__(self, key):
        return getattr(self, key)

    def get(self, key, default=None):
        return getattr(self, key, default)


class _Memory(_Record):
    def get_block(self, label):
        for block in self.blocks:
            if block.label == label:
                return block
        raise KeyError(f"Block field {label} does not exist (available sections = "
                       f"{', '.join(b.label for b in self.blocks)})")

    def list_block_labels(self):
        return [b.label for b in self.blocks]

    def __getitem__(self, label):  # the older dict form: memory[label] is the block's value
        return self.get_block(label).value


def _agent_state(data):
    blocks = [_Record(b) for b in data.get("blocks") or ()]
    fields = {k: v for k, v in data.items() if k != "blocks"}
    return _Record({**fields, "memory": _Memory({"blocks": blocks}), "blocks": blocks})


out, err = io.StringIO(), io.StringIO()
result = {"success": False, "value": None}
try:
    namespace = {"__name__": "cairn_tool"}
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        exec(compile(request["source"], "<tool>", "exec"), namespace)
        args = dict(request["args"])
        if request.get("agent_state") is not None:
            args["agent_state"] = _agent_state(request["agent_state"])
        value = namespace[request["name"]](**args)
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    result = {"success": True, "value": text}
except BaseException as exc:
    result = {"success": False, "value": f"{type(exc).__name__}: {exc}"}
    err.write(traceback.format_exc())
result["stdout"] = out.getvalue()[-__OUTPUT_CHARS__:]
result["stderr"] = err.getvalue()[-__OUTPUT_CHARS__:]
sys.__stdout__.write(__MARK__ + "\n" + json.dumps(result))
""".replace("__OUTPUT_CHARS__", str(OUTPUT_CHARS)).replace("__MARK__", repr(_MARK))


@dataclass(frozen=True)
class SandboxRequest:
    source: str
    name: str
    args: dict[str, Any]
    tool_call_id: str  # the idempotency key a tool with outside effects can use
    agent_state: dict[str, Any] | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS

    def payload(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "name": self.name,
            "args": self.args,
            "tool_call_id": self.tool_call_id,
            "agent_state": self.agent_state,
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


class Sandbox(Protocol):
    def run(self, request: SandboxRequest) -> SandboxResult: ...


class SubprocessSandbox:
    """A fresh interpreter per call: isolated mode, no environment, limits on CPU and memory."""

    def __init__(
        self, *, memory_bytes: int = DEFAULT_MEMORY_BYTES, python: str = sys.executable
    ) -> None:
        self.memory_bytes, self.python = memory_bytes, python

    def run(self, request: SandboxRequest) -> SandboxResult:
        timeout = request.timeout_seconds
        # Nothing of ours is inherited: no credentials, no DATABASE_URL, no provider keys.
        env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "CAIRN_TOOL_CALL_ID": request.tool_call_id,
            "CAIRN_SANDBOX_LIMITS": f"{int(timeout) + 1},{self.memory_bytes}",
        }
        try:
            done = subprocess.run(
                [self.python, "-I", "-c", RUNNER],
                input=json.dumps(request.payload()),
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                cwd=tempfile.gettempdir(),
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            return SandboxResult(False, f"TimeoutError: the tool ran longer than {timeout:g} s")
        _, mark, tail = done.stdout.partition(_MARK + "\n")
        if not mark:
            reason = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
            return SandboxResult(
                False,
                f"the tool's process died: {reason[0]}",
                stderr=[done.stderr[-OUTPUT_CHARS:]] if done.stderr else [],
            )
        return SandboxResult.from_runner(json.loads(tail))
