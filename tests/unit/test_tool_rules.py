"""The tool-rule solver (reference §6): one table per rule type, then combinations."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.domain.tool_rules import (
    ChildArgNode,
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
    tool_rules_adapter,
)
from cairn.tools.registry import BUILTIN_TOOLS
from cairn.tools.rules import ToolRulesSolver, ToolRuleViolation, rule_prompt

TOOLS = ["a", "b", "c", "send_message"]


def allowed(rules: list[ToolRule], history: list[str], output: str | None = None) -> list[str]:
    return ToolRulesSolver.of(rules).allowed_tools(TOOLS, history, output)


def case(rules: list[ToolRule], history: list[str], expected: list[str], output: str | None = None):  # type: ignore[no-untyped-def]
    return pytest.param(rules, history, output, expected, id=f"{history}->{expected}")


def check(
    rules: list[ToolRule], history: list[str], output: str | None, expected: list[str]
) -> None:
    assert allowed(rules, history, output) == expected


INIT = [InitToolRule(tool_name="a")]


@pytest.mark.parametrize(
    ("rules", "history", "output", "expected"),
    [
        case([], [], TOOLS),
        case(INIT, [], ["a"]),
        case(INIT, ["a"], TOOLS),
        case([*INIT, InitToolRule(tool_name="b")], [], ["a", "b"]),
        case([InitToolRule(tool_name="missing")], [], []),
    ],
)
def test_run_first(
    rules: list[ToolRule], history: list[str], output: str | None, expected: list[str]
) -> None:
    check(rules, history, output, expected)


CHILD = [ChildToolRule(tool_name="a", children=["b", "c"])]


@pytest.mark.parametrize(
    ("rules", "history", "output", "expected"),
    [
        case(CHILD, [], TOOLS),
        case(CHILD, ["a"], ["b", "c"]),
        case(CHILD, ["a", "b"], TOOLS),
        case(CHILD, ["b"], TOOLS),
        case([ChildToolRule(tool_name="a", children=["nope"])], ["a"], []),
    ],
)
def test_constrain_child_tools(
    rules: list[ToolRule], history: list[str], output: str | None, expected: list[str]
) -> None:
    check(rules, history, output, expected)


COND = [
    ConditionalToolRule(
        tool_name="a", child_output_mapping={"yes": "b", "42": "c"}, default_child="send_message"
    )
]
STRICT = [
    ConditionalToolRule(
        tool_name="a", child_output_mapping={"true": "b"}, require_output_mapping=True
    )
]
LOOSE = [ConditionalToolRule(tool_name="a", child_output_mapping={"true": "b"})]


@pytest.mark.parametrize(
    ("rules", "history", "output", "expected"),
    [
        case(COND, ["a"], ["b"], output="yes"),
        case(COND, ["a"], ["c"], output="42.0"),
        case(COND, ["a"], ["send_message"], output="maybe"),
        case(COND, ["b"], TOOLS, output="yes"),
        case(STRICT, ["a"], ["b"], output="True"),
        case(STRICT, ["a"], [], output="false"),
        case(LOOSE, ["a"], TOOLS, output="false"),
    ],
)
def test_conditional(
    rules: list[ToolRule], history: list[str], output: str | None, expected: list[str]
) -> None:
    check(rules, history, output, expected)


MAX = [MaxCountPerStepToolRule(tool_name="b", max_count_limit=2)]


@pytest.mark.parametrize(
    ("rules", "history", "output", "expected"),
    [
        case(MAX, [], TOOLS),
        case(MAX, ["b"], TOOLS),
        case(MAX, ["b", "a", "b"], ["a", "c", "send_message"]),
    ],
)
def test_max_count_per_step(
    rules: list[ToolRule], history: list[str], output: str | None, expected: list[str]
) -> None:
    check(rules, history, output, expected)


PARENT = [ParentToolRule(tool_name="a", children=["b", "c"])]


@pytest.mark.parametrize(
    ("rules", "history", "output", "expected"),
    [
        case(PARENT, [], ["a", "send_message"]),
        case(PARENT, ["a"], TOOLS),
        case(PARENT, ["a", "send_message"], ["a", "send_message"]),
    ],
)
def test_parent_last_tool(
    rules: list[ToolRule], history: list[str], output: str | None, expected: list[str]
) -> None:
    check(rules, history, output, expected)


@pytest.mark.parametrize(
    ("rules", "history", "output", "expected"),
    [
        # init, then child, then the max count takes b away the second time round
        case(INIT + CHILD + MAX, [], ["a"]),
        case(INIT + CHILD + MAX, ["a"], ["b", "c"]),
        case(INIT + CHILD + MAX, ["a", "b", "a"], ["b", "c"]),
        case(INIT + CHILD + MAX, ["a", "b", "a", "b", "a"], ["c"]),
        # a parent rule and a child rule intersect
        case([*CHILD, ParentToolRule(tool_name="c", children=["b"])], ["a"], ["c"]),
        # a conditional choice can still be taken away by a max count
        case(
            [*COND, MaxCountPerStepToolRule(tool_name="b", max_count_limit=1)],
            ["b", "a"],
            [],
            output="yes",
        ),
    ],
)
def test_combinations(
    rules: list[ToolRule], history: list[str], output: str | None, expected: list[str]
) -> None:
    check(rules, history, output, expected)


@pytest.mark.parametrize(
    ("rule", "tool", "terminal", "continues"),
    [
        (TerminalToolRule(tool_name="send_message"), "send_message", True, False),
        (TerminalToolRule(tool_name="send_message"), "a", False, False),
        (ContinueToolRule(tool_name="a"), "a", False, True),
        (ContinueToolRule(tool_name="a"), "send_message", False, False),
    ],
)
def test_exit_loop_and_continue_loop(
    rule: ToolRule, tool: str, terminal: bool, continues: bool
) -> None:
    solver = ToolRulesSolver.of([rule])
    assert solver.is_terminal(tool) is terminal and solver.is_continue(tool) is continues
    # loop decisions never narrow the allow-list
    assert solver.allowed_tools(TOOLS, [tool]) == TOOLS


@pytest.mark.parametrize(
    ("history", "missing"),
    [
        ([], ["a", "b"]),
        (["a"], ["b"]),
        (["b", "c", "a"], []),
    ],
)
def test_required_before_exit(history: list[str], missing: list[str]) -> None:
    solver = ToolRulesSolver.of(
        [RequiredBeforeExitToolRule(tool_name="a"), RequiredBeforeExitToolRule(tool_name="b")]
    )
    assert solver.missing_before_exit(history) == missing


@pytest.mark.parametrize(
    ("tool", "default", "expected"),
    [
        ("a", False, True),
        ("b", False, False),
        ("b", True, True),
    ],
)
def test_requires_approval(tool: str, default: bool, expected: bool) -> None:
    solver = ToolRulesSolver.of([RequiresApprovalToolRule(tool_name="a")])
    assert solver.requires_approval(tool, default=default) is expected


SEARCH = BUILTIN_TOOLS["archival_memory_search"].json_schema


@pytest.mark.parametrize(
    ("rules", "history", "model_args", "expected"),
    [
        (
            [InitToolRule(tool_name="archival_memory_search", args={"top_k": 3})],
            [],
            {"query": "q", "top_k": 50},
            {"query": "q", "top_k": 3},
        ),
        (
            [InitToolRule(tool_name="archival_memory_search", args={"top_k": 3})],
            ["a"],
            {"query": "q"},
            {"query": "q"},
        ),
        (
            [
                ChildToolRule(
                    tool_name="a",
                    children=["archival_memory_search"],
                    child_arg_nodes=[
                        ChildArgNode(
                            name="archival_memory_search",
                            args={"tag_match_mode": "all", "tags": ["x"]},
                        )
                    ],
                )
            ],
            ["a"],
            {"query": "q"},
            {"query": "q", "tag_match_mode": "all", "tags": ["x"]},
        ),
    ],
)
def test_prefilled_args_override_the_model(
    rules: list[ToolRule], history: list[str], model_args: dict[str, Any], expected: dict[str, Any]
) -> None:
    merged = ToolRulesSolver.of(rules).merge_prefilled(
        "archival_memory_search", model_args, SEARCH, history
    )
    assert merged == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"nope": 1}, "`nope` is not a parameter"),
        ({"top_k": "three"}, "must be of type integer"),
        ({"top_k": True}, "must be of type integer"),
        ({"tag_match_mode": "some"}, "must be one of"),
        ({"tags": "x"}, "must be of type array"),
    ],
)
def test_invalid_prefilled_args_are_an_invalid_tool_call(
    args: dict[str, Any], message: str
) -> None:
    solver = ToolRulesSolver.of([InitToolRule(tool_name="archival_memory_search", args=args)])
    with pytest.raises(ToolRuleViolation, match=message):
        solver.merge_prefilled("archival_memory_search", {"query": "q"}, SEARCH, [])


def test_rules_compile_to_letta_s_lines_in_letta_s_order() -> None:
    """Letta 0.16.1's compile_tool_rule_prompts: continue, then child/conditional/max-count,
    then parent, then terminal rules, in its words; init, required-before-exit and approval
    rules show nothing."""
    rules = tool_rules_adapter.validate_python(
        [
            {"type": "run_first", "tool_name": "a"},
            {"type": "exit_loop", "tool_name": "send_message"},
            {"type": "continue_loop", "tool_name": "b"},
            {"type": "constrain_child_tools", "tool_name": "a", "children": ["b", "c"]},
            {
                "type": "conditional",
                "tool_name": "a",
                "child_output_mapping": {"yes": "b"},
                "default_child": "c",
            },
            {"type": "max_count_per_step", "tool_name": "b", "max_count_limit": 2},
            {"type": "parent_last_tool", "tool_name": "a", "children": ["c"]},
            {"type": "required_before_exit", "tool_name": "c"},
            {"type": "requires_approval", "tool_name": "c"},
        ]
    )
    lines = ToolRulesSolver.of(rules).prompt_lines()
    assert [
        line.removeprefix("<tool_rule>\n").removesuffix("\n</tool_rule>") for line in lines
    ] == [
        "b requires continuing your response when called",
        "After using a, you must use one of these tools: b, c",
        "a will determine which tool to use next based on its output",
        "b: at most 2 use(s) per response",
        "c can only be used after a",
        "send_message ends your response (yields control) when called",
    ]


def test_a_rule_prompt_template_is_ignored_as_in_letta() -> None:
    # Letta's BaseToolRule: "Optional template string (ignored)".
    template = "Use {{ children }} after {{tool_name}}."
    rule = ChildToolRule(tool_name="a", children=["b"], prompt_template=template)
    assert rule_prompt(rule) == "After using a, you must use one of these tools: b"
