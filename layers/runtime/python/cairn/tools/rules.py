"""The tool-rule solver: which tools a step may call, and what a call means.

`history` is the names of the tools called so far in this turn, oldest first. The solver
is pure and holds no state; the engine passes the history in, so a resumed step decides
exactly what the interrupted one would have.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cairn.domain.tool_rules import (
    ChildToolRule,
    ConditionalToolRule,
    ContinueToolRule,
    InitToolRule,
    MaxCountPerStepToolRule,
    ParentToolRule,
    RequiredBeforeExitToolRule,
    RequiresApprovalToolRule,
    TerminalToolRule,
    ToolRule,
)

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


class ToolRuleViolation(ValueError):
    """A call the rules forbid in a way the model cannot fix (stop: `invalid_tool_call`)."""


@dataclass(frozen=True)
class ToolRulesSolver:
    rules: tuple[ToolRule, ...] = ()

    @classmethod
    def of(cls, rules: Iterable[ToolRule]) -> ToolRulesSolver:
        return cls(tuple(rules))

    def _of_type(self, kind: type[Any]) -> list[Any]:
        return [r for r in self.rules if isinstance(r, kind)]

    # -- the allow-list -----------------------------------------------------------------

    def allowed_tools(
        self, available: Sequence[str], history: Sequence[str], last_output: str | None = None
    ) -> list[str]:
        """The tools this step may call, in the order of `available`.

        With no tool called yet and an init rule, only init tools; otherwise what every
        child, conditional, parent and max-count rule allows at once.
        """
        init = {r.tool_name for r in self._of_type(InitToolRule)}
        if not history and init:
            return [t for t in available if t in init]
        last = history[-1] if history else None
        allowed = set(available)
        for rule in self.rules:
            if isinstance(rule, ChildToolRule) and rule.tool_name == last:
                allowed &= set(rule.children)
            elif isinstance(rule, ConditionalToolRule) and rule.tool_name == last:
                allowed &= _conditional_next(rule, last_output, allowed)
            elif isinstance(rule, MaxCountPerStepToolRule):
                if list(history).count(rule.tool_name) >= rule.max_count_limit:
                    allowed.discard(rule.tool_name)
            elif isinstance(rule, ParentToolRule) and rule.tool_name != last:
                allowed -= set(rule.children)
        return [t for t in available if t in allowed]

    # -- loop decisions -----------------------------------------------------------------

    def is_terminal(self, tool_name: str) -> bool:
        return any(r.tool_name == tool_name for r in self._of_type(TerminalToolRule))

    def is_continue(self, tool_name: str) -> bool:
        return any(r.tool_name == tool_name for r in self._of_type(ContinueToolRule))

    def missing_before_exit(self, history: Sequence[str]) -> list[str]:
        """Tools a `required_before_exit` rule still wants called before the turn may end."""
        called = set(history)
        return [
            r.tool_name
            for r in self._of_type(RequiredBeforeExitToolRule)
            if r.tool_name not in called
        ]

    def requires_approval(self, tool_name: str, *, default: bool = False) -> bool:
        """A rule asks for approval, or the tool does by default (`default_requires_approval`)."""
        return default or any(
            r.tool_name == tool_name for r in self._of_type(RequiresApprovalToolRule)
        )

    # -- prefilled arguments ------------------------------------------------------------

    def prefilled_args(self, tool_name: str, history: Sequence[str]) -> dict[str, Any]:
        """Arguments the rules fix for this call: init args first, then a parent's child args."""
        if not history:
            for rule in self._of_type(InitToolRule):
                if rule.tool_name == tool_name and rule.args:
                    return dict(rule.args)
            return {}
        for rule in self._of_type(ChildToolRule):
            if rule.tool_name == history[-1]:
                for node in rule.child_arg_nodes or ():
                    if node.name == tool_name and node.args:
                        return dict(node.args)
        return {}

    def merge_prefilled(
        self,
        tool_name: str,
        args: dict[str, Any],
        schema: dict[str, Any],
        history: Sequence[str],
    ) -> dict[str, Any]:
        """The model's arguments with the prefilled ones laid over them, after checking those."""
        prefilled = self.prefilled_args(tool_name, history)
        check_prefilled(tool_name, prefilled, schema)
        return {**args, **prefilled}

    # -- the prompt ---------------------------------------------------------------------

    def prompt_lines(self) -> list[str]:
        """The `<tool_rule>` elements `<tool_usage_rules>` shows, as Letta 0.16.1 compiles them
        (`ToolRulesSolver.compile_tool_rule_prompts`): continue rules, then child,
        conditional and max-count rules, then parent rules, then terminal rules, each group
        in the agent's order, in Letta's words. Init, required-before-exit and approval
        rules show nothing, and a rule's `prompt_template` is ignored, as in Letta."""
        groups: tuple[type[Any] | tuple[type[Any], ...], ...] = (
            ContinueToolRule,
            (ChildToolRule, ConditionalToolRule, MaxCountPerStepToolRule),
            ParentToolRule,
            TerminalToolRule,
        )
        ordered = [r for kinds in groups for r in self.rules if isinstance(r, kinds)]
        return [f"<tool_rule>\n{rule_prompt(rule)}\n</tool_rule>" for rule in ordered]


def rule_prompt(rule: ToolRule) -> str:
    """A rule in Letta's words (its `render_prompt`), for the rules Letta shows."""
    name = rule.tool_name
    if isinstance(rule, ContinueToolRule):
        return f"{name} requires continuing your response when called"
    if isinstance(rule, ChildToolRule):
        return f"After using {name}, you must use one of these tools: {', '.join(rule.children)}"
    if isinstance(rule, ConditionalToolRule):
        return f"{name} will determine which tool to use next based on its output"
    if isinstance(rule, MaxCountPerStepToolRule):
        return f"{name}: at most {rule.max_count_limit} use(s) per response"
    if isinstance(rule, ParentToolRule):
        return f"{', '.join(rule.children)} can only be used after {name}"
    if isinstance(rule, TerminalToolRule):
        return f"{name} ends your response (yields control) when called"
    raise ValueError(f"Letta shows no prompt for a {rule.type} rule")


def check_prefilled(tool_name: str, prefilled: dict[str, Any], schema: dict[str, Any]) -> None:
    """Each prefilled argument exists in the schema and has its type (and enum value)."""
    properties = (schema.get("parameters") or {}).get("properties") or {}
    for key, value in prefilled.items():
        spec = properties.get(key)
        if spec is None:
            known = ", ".join(sorted(properties)) or "none"
            raise ToolRuleViolation(
                f"Prefilled argument `{key}` is not a parameter of `{tool_name}` "
                f"(parameters: {known})."
            )
        expected = spec.get("type")
        kinds = expected if isinstance(expected, list) else [expected] if expected else []
        if kinds and not any(_is_type(value, kind) for kind in kinds):
            raise ToolRuleViolation(
                f"Prefilled argument `{key}` of `{tool_name}` must be of type "
                f"{' or '.join(kinds)}, not {type(value).__name__}."
            )
        if "enum" in spec and value not in spec["enum"]:
            raise ToolRuleViolation(
                f"Prefilled argument `{key}` of `{tool_name}` must be one of {spec['enum']}, "
                f"not {value!r}."
            )


def _is_type(value: Any, kind: str) -> bool:
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False  # JSON keeps booleans and numbers apart; Python does not
    return isinstance(value, _JSON_TYPES.get(kind, (object,)))


def _conditional_next(rule: ConditionalToolRule, output: str | None, allowed: set[str]) -> set[str]:
    text = (output or "").strip()
    for key, tool in rule.child_output_mapping.items():
        if _output_matches(text, key):
            return {tool}
    if rule.default_child:
        return {rule.default_child}
    # An output no case expects: a strict rule allows nothing (the turn stops on the rule).
    return set() if rule.require_output_mapping else allowed


def _output_matches(output: str, key: str) -> bool:
    if key.lower() in ("true", "false"):
        return output.lower() == key.lower()
    try:
        return float(output) == float(key)
    except ValueError:
        return output == key
