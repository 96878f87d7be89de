"""The nine tool-rule types of Letta, discriminated by `type`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, TypeAdapter

from cairn.domain.base import DEFERRED, Value


class _Rule(Value):
    tool_name: str = Field(min_length=1)
    prompt_template: str | None = None


class InitToolRule(_Rule):
    type: Literal["run_first"] = "run_first"
    args: dict[str, Any] | None = None


class TerminalToolRule(_Rule):
    type: Literal["exit_loop"] = "exit_loop"


class ContinueToolRule(_Rule):
    type: Literal["continue_loop"] = "continue_loop"


class ChildArgNode(Value):
    name: str
    args: dict[str, Any] | None = None


class ChildToolRule(_Rule):
    type: Literal["constrain_child_tools"] = "constrain_child_tools"
    children: list[str]
    child_arg_nodes: list[ChildArgNode] | None = None


class ConditionalToolRule(_Rule):
    type: Literal["conditional"] = "conditional"
    child_output_mapping: dict[str, str]
    default_child: str | None = None
    require_output_mapping: bool = False


class MaxCountPerStepToolRule(_Rule):
    type: Literal["max_count_per_step"] = "max_count_per_step"
    max_count_limit: int = Field(ge=1)


class ParentToolRule(_Rule):
    type: Literal["parent_last_tool"] = "parent_last_tool"
    children: list[str]


class RequiredBeforeExitToolRule(_Rule):
    type: Literal["required_before_exit"] = "required_before_exit"


class RequiresApprovalToolRule(_Rule):
    type: Literal["requires_approval"] = "requires_approval"


ToolRule = Annotated[
    InitToolRule
    | TerminalToolRule
    | ContinueToolRule
    | ChildToolRule
    | ConditionalToolRule
    | MaxCountPerStepToolRule
    | ParentToolRule
    | RequiredBeforeExitToolRule
    | RequiresApprovalToolRule,
    Field(discriminator="type"),
]

tool_rules_adapter: TypeAdapter[list[ToolRule]] = TypeAdapter(list[ToolRule], config=DEFERRED)


def _identity(rule: Any) -> tuple[Any, ...]:
    """What makes two rules the same rule, as Letta 0.16.1 compares them (schemas/
    tool_rule.py): the tool and the type, and the children, the conditional mapping or the
    count where the type has one; a prompt template or arguments do not count."""
    key: tuple[Any, ...] = (rule.tool_name, rule.type)
    if isinstance(rule, ChildToolRule | ParentToolRule):
        key += (tuple(sorted(rule.children)),)
    elif isinstance(rule, ConditionalToolRule):
        mapping = tuple(sorted(rule.child_output_mapping.items()))
        key += (rule.default_child, mapping, rule.require_output_mapping)
    elif isinstance(rule, MaxCountPerStepToolRule):
        key += (rule.max_count_limit,)
    return key


def distinct(rules: list[Any]) -> list[Any]:
    """The rules with each repeated one kept once, the first, in order (Letta keeps one)."""
    seen: set[tuple[Any, ...]] = set()
    kept = []
    for rule in rules:
        if (key := _identity(rule)) not in seen:
            seen.add(key)
            kept.append(rule)
    return kept


# An agent's rules: each repeated one kept once, as Letta stores them.
ToolRules = Annotated[list[ToolRule], AfterValidator(distinct)]
