"""What runs where a tool runs: the runner script a sandbox's interpreter is given, and the
cleanup after a call on a host that runs nothing but tools (the sandbox Lambda function)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal

from cairn.tools.sandbox import OUTPUT_CHARS

MARK = "\x1e__cairn_result__"

# Runs inside the sandbox: reads the request as JSON on stdin, runs the tool with stdout and
# stderr captured, and prints the result after a marker line (the tool may print anything).
RUNNER = r"""
import contextlib, io, json, os, sys, traceback
if os.environ.get("CAIRN_SANDBOX_LIMITS"):
    # Limits set by the child itself, before any tool code runs (a preexec_fn is unsafe in
    # a threaded parent).
    import resource
    cpu, memory, files = (int(v) for v in os.environ.pop("CAIRN_SANDBOX_LIMITS").split(","))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
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
""".replace("__OUTPUT_CHARS__", str(OUTPUT_CHARS)).replace("__MARK__", repr(MARK))


def leave_nothing_behind(scratch: str = "/tmp") -> int:
    """Kill every other process of this user but our own ancestors, and empty `scratch`
    (Lambda's only writable place); how many processes were killed.

    For a host whose only business is running tools (the sandbox Lambda function): a tool
    that daemonised itself (double fork, new session) escapes its process group, and a
    warm environment serves the next call, another organization's maybe. Does nothing outside
    Lambda's runtime (elsewhere "every other process of this user" is far too much).
    """
    if not os.environ.get("AWS_LAMBDA_RUNTIME_API"):
        return 0
    keep, pid = set(), os.getpid()
    while pid > 1:
        keep.add(pid)
        pid = _parent(pid)
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in keep or int(entry) == 1:
            continue
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{entry}").st_uid == os.geteuid():
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
    for entry in os.listdir(scratch):
        path = os.path.join(scratch, entry)
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
    return killed


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return 0
