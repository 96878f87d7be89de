"""The subprocess sandbox: values, errors, time and memory limits, nothing inherited."""

from __future__ import annotations

import pytest

from cairn.tools.sandbox import SandboxRequest
from cairn.tools.subprocess_sandbox import SubprocessSandbox, read_only_paths

SANDBOX = SubprocessSandbox(memory_bytes=256 * 1024 * 1024)


def run(source: str, name: str, timeout: float = 5, **args: object):  # type: ignore[no-untyped-def]
    return SANDBOX.run(
        SandboxRequest(source, name, dict(args), "call_sandbox1", timeout_seconds=timeout)
    )


def test_value_stdout_and_the_idempotency_key() -> None:
    done = run(
        'import os\ndef f(x):\n    print("working")\n'
        '    return {"got": x, "key": os.environ["CAIRN_TOOL_CALL_ID"]}',
        "f",
        x=2,
    )
    assert done.success and done.value == '{"got": 2, "key": "call_sandbox1"}'
    assert done.stdout == ["working\n"]


def test_an_exception_is_a_failed_result_with_its_traceback() -> None:
    done = run("def f():\n    raise ValueError('boom')", "f")
    assert not done.success and done.value == "ValueError: boom"
    assert "Traceback" in done.stderr[0]


def test_a_tool_past_its_timeout_is_stopped() -> None:
    done = run("import time\ndef f():\n    time.sleep(30)", "f", timeout=1)
    assert not done.success and "longer than 1 s" in done.value


def test_memory_is_limited() -> None:
    done = run("def f():\n    return len('x' * 2**31)", "f")
    assert not done.success and done.value.startswith("MemoryError")


def test_the_parent_environment_is_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_TEST_SECRET", "hunter2")
    done = run("import os\ndef f():\n    return repr(sorted(os.environ))", "f")
    assert "CAIRN_TEST_SECRET" not in done.value and "DATABASE_URL" not in done.value


def test_a_process_that_dies_is_a_failed_result() -> None:
    done = run("import os\ndef f():\n    os._exit(3)", "f")
    assert not done.success and "died" in done.value


def test_the_jail_binds_the_interpreter_wherever_it_is_installed() -> None:
    system = ["/usr", "/bin", "/lib", "/lib64", "/lib32", "/libx32", "/sbin"]
    # A python under /usr/local (the official container images) keeps /usr, libc with it.
    assert read_only_paths("/usr/local", "/usr/local/bin") == system
    pyenv = "/root/.pyenv/versions/3.11.7"
    assert read_only_paths(pyenv, pyenv + "/bin") == [*system, pyenv]
    assert read_only_paths("/var/lang", "/opt/py/bin") == [*system, "/var/lang", "/opt/py/bin"]
