"""Custom tool schemas read from source with `ast`: the code is never run to read them."""

from __future__ import annotations

import pytest

from cairn.tools.source import SourceError, derive_schema, takes_agent_state

TOOL = '''
from typing import Literal, Optional

def helper(x):
    return x

def lookup(city: str, days: int = 3, units: Literal["c", "f"] = "c",
           tags: list[str] | None = None, exact: Optional[bool] = None, agent_state=None) -> str:
    """Look up the weather.

    Uses a made-up service.

    Args:
        city: The city name.
        days: How many days.
        units: Celsius or Fahrenheit.
        tags: Labels.
        exact: Exact match only.
    """
    raise SystemExit("never run")
'''


def test_schema_from_signature_and_docstring_without_running_the_code() -> None:
    schema = derive_schema(TOOL)
    assert schema["name"] == "lookup"
    assert schema["description"] == "Look up the weather.\n\nUses a made-up service."
    props = schema["parameters"]["properties"]
    assert props["city"] == {"type": "string", "description": "The city name."}
    assert props["days"] == {"type": "integer", "description": "How many days."}
    assert props["units"] == {
        "enum": ["c", "f"],
        "type": "string",
        "description": "Celsius or Fahrenheit.",
    }
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "description": "Labels."}
    assert props["exact"]["type"] == "boolean" and "agent_state" not in props
    assert schema["parameters"]["required"] == ["city"]
    assert takes_agent_state(TOOL, "lookup")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "def f(x: int):\n    return x",
            "Failed to derive json schema for `f`: the function has no docstring",
        ),
        ('def f(x):\n    """Doc."""', "parameter `x` has no type annotation"),
        ('def f(x: set[int]):\n    """Doc."""', "a type the model cannot use: set[int]"),
        ("def f(:", "not valid Python"),
        ("x = 1", "no top-level function"),
        ("def " + "f" * 49 + '():\n    """Doc."""', "over 48 characters"),
        ('def f(*args: int):\n    """Doc."""', "*args and **kwargs"),
    ],
)
def test_sources_a_schema_cannot_come_from_are_refused_clearly(source: str, message: str) -> None:
    with pytest.raises(
        SourceError, match=message.replace("[", r"\[").replace("]", r"\]").replace("*", r"\*")
    ):
        derive_schema(source)
