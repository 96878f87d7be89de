"""POST /v1/tools/generate-tool (letta-client 1.5.0 has no method for it: over HTTP): one call
to the model the handle names, worded as Letta words it (its system prompt, acknowledgement and
`generate_tool` tool, from its source), and the tool read from the model's source, returned
and not stored. What a model gets wrong is the model's failure (502), said; what the caller
gets wrong is a 4xx naming the field."""

from __future__ import annotations

from typing import Any

from cairn.services.tool_generation import ACK, system_prompt
from tests.api.conftest import Stack
from tests.api.test_providers import KEY, api, create, sent_key
from tests.fakes.llm_server import call

SOURCE = '''def double(x: int) -> int:
    """Double a number.

    Args:
        x (int): The number to double.

    Returns:
        int: twice x
    """
    return 2 * x
'''


def written(
    source: str = SOURCE, sample: str = '{"x": 21}', pips: str = '{"requests": ""}'
) -> tuple[str, dict[str, Any]]:
    return call(
        "generate_tool",
        raw_source_code=source,
        sample_args_json=sample,
        pip_requirements_json=pips,
    )


def test_a_tool_is_written_by_the_model_as_letta_asks_and_not_stored(stack: Stack) -> None:
    stack.fake.reply("Here is your tool.", written())
    body = {
        "tool_name": "double",
        "prompt": "Double the number given",
        "starter_code": "def double(x: int) -> int: ...",
        "validation_errors": ["no docstring", "no return"],
    }
    with api(stack) as http:
        answer = http.post("/tools/generate-tool", json=body)
        assert answer.status_code == 200, answer.text
        made = answer.json()
        assert made["response"] == "Here is your tool." and made["sample_args"] == {"x": 21}
        tool = made["tool"]
        assert tool["name"] == "double" and tool["source_code"] == SOURCE
        assert tool["json_schema"]["parameters"]["properties"]["x"]["type"] == "integer"
        assert tool["json_schema"]["description"] == "Double a number."
        assert tool["pip_requirements"] == [{"name": "requests", "version": None}]
        assert http.get("/tools/", params={"name": "double"}).json() == []  # returned only

    sent = stack.fake.requests[-1]
    assert sent.body["model"] == "gpt-4.1"  # Letta's default handle, openai/gpt-4.1
    roles = [m["role"] for m in sent.body["messages"]]
    assert roles == ["system", "assistant", "user"]
    assert sent.system_text() == system_prompt()
    assert system_prompt().startswith("<base_instructions>\nYou are Letta")
    assert sent.body["messages"][1]["content"] == ACK
    assert sent.last_text() == (
        "Generate a python function named double using the instructions below based on this "
        "starter code: \n\n```\ndef double(x: int) -> int: ...\n```\n\n"
        "Note the following validation errors: \nno docstring no return\n\n"
        "Instructions: Double the number given"
    )
    assert sent.tool_names == ["generate_tool"]
    assert sent.body.get("tool_choice", "auto") == "auto"  # Letta's, for its v1 agent


def test_the_prompt_is_letta_s_word_for_word() -> None:
    # The text Letta 0.16.1 sends (letta/prompts/system_prompts/memgpt_generate_tool.py),
    # by its length and its ends, so a trimmed or reworded copy fails here.
    text = system_prompt()
    assert len(text) == 6590 and text.endswith("Base instructions finished.\n</base_instructions>")


def test_a_handle_of_the_organization_s_own_provider_uses_its_key(stack: Stack) -> None:
    with api(stack) as http:
        create(http, stack)
        stack.fake.reply("", written())
        body = {
            "tool_name": "double",
            "prompt": "p",
            "validation_errors": [],
            "handle": "team-openai/gpt-4o-mini",
        }
        answer = http.post("/tools/generate-tool", json=body)
        assert answer.status_code == 200, answer.text
    assert sent_key(stack) == f"Bearer {KEY}"
    assert stack.fake.requests[-1].last_text() == (
        "Generate a python function named double using the instructions below \n\nInstructions: p"
    )


def test_what_the_model_gets_wrong_is_a_502_that_says_what(stack: Stack) -> None:
    body = {"tool_name": "double", "prompt": "p", "validation_errors": []}
    with api(stack) as http:
        stack.fake.reply("I would rather not.")
        no_call = http.post("/tools/generate-tool", json=body)
        assert no_call.status_code == 502
        assert "did not return a tool call. Response: I would rather not." in no_call.text

        stack.fake.reply("", written(sample="{not json"))
        malformed = http.post("/tools/generate-tool", json=body)
        assert malformed.status_code == 502 and "malformed" in malformed.text

        stack.fake.reply("", written(sample="[1, 2]"))
        wrong = http.post("/tools/generate-tool", json=body)
        assert wrong.status_code == 502 and "wrong types" in wrong.text

        renamed = SOURCE.replace("def double", "def triple")
        stack.fake.reply("", written(source=renamed))
        other = http.post("/tools/generate-tool", json=body)
        assert other.status_code == 502 and "named its function `triple`" in other.text

        # Source a schema cannot be read from: Letta's 400, naming tool_name.
        stack.fake.reply("", written(source="def double(x: int) -> int:\n    return x\n"))
        bad = http.post("/tools/generate-tool", json=body)
        assert bad.status_code == 400 and "tool_name" in bad.text and "docstring" in bad.text
        stack.fake.reply("", written(source="def double(x: int) -> int\n"))
        broken = http.post("/tools/generate-tool", json=body)
        assert broken.status_code == 400 and "not valid Python" in broken.text
        assert http.get("/tools/", params={"name": "double"}).json() == []


def test_what_the_caller_gets_wrong_is_a_4xx_naming_the_field(stack: Stack) -> None:
    before = len(stack.fake.requests)
    with api(stack) as http:
        for body, field in (
            ({"prompt": "p", "validation_errors": []}, "tool_name"),
            ({"tool_name": "not a name", "prompt": "p", "validation_errors": []}, "tool_name"),
            ({"tool_name": "x", "prompt": "", "validation_errors": []}, "prompt"),
            ({"tool_name": "x", "prompt": "p" * 20_001, "validation_errors": []}, "prompt"),
            ({"tool_name": "x", "prompt": "p"}, "validation_errors"),
            (
                {"tool_name": "x", "prompt": "p", "validation_errors": ["e"] * 51},
                "validation_errors",
            ),
        ):
            answer = http.post("/tools/generate-tool", json=body)
            assert answer.status_code == 422 and field in answer.text, (body, answer.text)
        unknown = http.post(
            "/tools/generate-tool",
            json={"tool_name": "x", "prompt": "p", "validation_errors": [], "handle": "nope"},
        )
        assert unknown.status_code == 400 and "model" in unknown.text
    assert len(stack.fake.requests) == before  # no model was asked
