"""run_code's program: the model's Python, run in the tool sandbox as a tool whose one
argument is the code. Its last expression's value is the result (as a notebook shows it);
output and errors come back as Letta's run_code shows them (results, logs, error)."""

from __future__ import annotations

import json
from typing import Any

from cairn.tools.sandbox import SandboxResult

NAME = "run_code"
# The tool the sandbox runs: standard library only, its own namespace for the code.
RUNNER = '''
def run_code(code: str) -> str:
    """Runs the code given."""
    import ast

    tree = ast.parse(code, "<code>")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    space = {"__name__": "__main__"}
    exec(compile(tree, "<code>", "exec"), space)
    if last is None:
        return None
    value = eval(compile(last, "<code>", "eval"), space)
    return None if value is None else repr(value)
'''
LANGUAGES = ("python", "js", "ts", "r", "java")


def program(code: str, helpers: list[str]) -> tuple[str, dict[str, Any]]:
    """The sandbox's source and arguments: the runner, and the code with the agent's own
    tools' source before it (run_code_with_tools)."""
    return RUNNER, {"code": "\n\n".join([*helpers, code])}


def shown(done: SandboxResult) -> str:
    """Letta's run_code answer: {"results", "logs": {"stdout", "stderr"}, "error"?}."""
    out: dict[str, Any] = {
        "results": [done.value] if done.success and done.value not in ("", "None") else [],
        "logs": {"stdout": done.stdout, "stderr": done.stderr},
    }
    if not done.success:
        out["error"] = done.value
    return json.dumps(out, ensure_ascii=False)
