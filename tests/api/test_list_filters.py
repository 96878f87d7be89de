"""Letta's list filters that clients send: each one applied, not ignored (an ignored filter
answers with everything, which a client cannot tell from a match)."""

from __future__ import annotations

import httpx

from tests.api.conftest import Stack

LLM = {"model": "gpt-fake-mini", "model_endpoint_type": "openai", "context_window": 32000}


def test_agents_count_takes_the_lists_filters_and_both_filter_by_last_stop_reason(
    stack: Stack,
) -> None:
    client = stack.client()
    for name, tags in (("alpha-one", ["red"]), ("alpha-two", ["red", "blue"]), ("beta", [])):
        client.agents.create(name=name, tags=tags, llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("done")
    talked = client.agents.list(name="beta").items[0]
    client.agents.messages.create(talked.id, input="hi")
    headers = {"Authorization": f"Bearer {stack.key}"}

    def count(**params: object) -> int:
        answer = httpx.get(f"{stack.url}/v1/agents/count", params=params, headers=headers)
        assert answer.status_code == 200, answer.text
        return int(answer.json())

    assert count() == 3
    assert count(query_text="ALPHA") == 2 and count(name="beta") == 1
    assert (
        count(tags=["red", "blue"]) == 2 and count(tags=["red", "blue"], match_all_tags=True) == 1
    )
    assert count(last_stop_reason="end_turn") == 1 and count(last_stop_reason="error") == 0
    assert [a.name for a in client.agents.list(last_stop_reason="end_turn")] == ["beta"]
    odd = httpx.get(
        f"{stack.url}/v1/agents/count", params={"last_stop_reason": "x"}, headers=headers
    )
    assert odd.status_code == 422 and "last_stop_reason" in odd.text


def test_blocks_are_searched_by_label_value_description_name_and_attachments(
    stack: Stack,
) -> None:
    client = stack.client()
    shared = client.blocks.create(
        label="team_notes", value="Launch on Monday", description="What the team agreed"
    )
    alone = client.blocks.create(label="scratch", value="nothing here")
    for n in range(2):
        client.agents.create(name=f"a{n}", llm_config=LLM, block_ids=[shared.id])  # type: ignore[arg-type]

    def ids(**params: object) -> set[str]:
        return {b.id for b in client.blocks.list(**params)}  # type: ignore[arg-type]

    assert ids(label_search="NOTES") == {shared.id}
    assert ids(value_search="monday") == {shared.id}
    assert ids(description_search="agreed") == {shared.id}
    assert ids(connected_to_agents_count_gt=1) == {shared.id}
    assert alone.id in ids(connected_to_agents_count_lt=1) and shared.id not in ids(
        connected_to_agents_count_lt=1
    )
    assert ids(connected_to_agents_count_eq=[0, 2]) >= {shared.id, alone.id}
    assert ids(connected_to_agents_count_eq=[5]) == set()
    assert ids(name="no-such-template") == set()


def test_tags_by_name_both_ways_and_before(stack: Stack) -> None:
    client = stack.client()
    client.agents.create(tags=["apple", "apricot", "banana", "cherry"], llm_config=LLM)  # type: ignore[arg-type]
    assert client.tags.list() == ["apple", "apricot", "banana", "cherry"]
    assert client.tags.list(name="ap") == ["apple", "apricot"]
    assert client.tags.list(order="desc", limit=2) == ["cherry", "banana"]
    assert client.tags.list(order="desc", after="banana") == ["apricot", "apple"]
    assert client.tags.list(before="banana") == ["apple", "apricot"]


def test_models_by_category_name_and_type(stack: Stack) -> None:
    client = stack.client()
    headers = {"Authorization": f"Bearer {stack.key}"}
    made = httpx.post(
        f"{stack.url}/v1/providers/",
        headers=headers,
        json={
            "name": "team",
            "provider_type": "openai",
            "api_key": "sk-team-000000",
            "base_url": f"{stack.fake.base_url}/v1",
        },
    )
    assert made.status_code == 200
    everything = {m.handle for m in client.models.list()}
    assert {"openai/gpt-fake-mini", "anthropic/gpt-fake-mini", "team/gpt-fake-mini"} <= everything
    own = {m.handle for m in client.models.list(provider_category=["byok"])}
    assert own == {"team/gpt-fake-mini", "team/gpt-fake-large"}
    assert {m.provider_category for m in client.models.list(provider_category=["base"])} == {"base"}
    assert {m.handle for m in client.models.list(provider_name="team")} == own
    anthropic = {m.provider_type for m in client.models.list(provider_type="anthropic")}
    assert anthropic == {"anthropic"}


def test_tools_are_filtered_in_the_query_so_pages_hold_matches(stack: Stack) -> None:
    """`search` and `names` were applied to a page after it was read: a match past the first
    page was never shown. Now every filter is part of the query, and the count takes them."""
    client = stack.client()
    made = []
    for n in range(6):
        source = f'def tool_{n}(x: str) -> str:\n    """Echo.\n\n    Args:\n        x: text\n    """\n    return x\n'  # noqa: E501
        made.append(client.tools.create(source_code=source))
    headers = {"Authorization": f"Bearer {stack.key}"}

    def names(**params: object) -> list[str]:
        answer = httpx.get(f"{stack.url}/v1/tools/", params=params, headers=headers)
        assert answer.status_code == 200, answer.text
        return [t["name"] for t in answer.json()]

    def count(**params: object) -> int:
        return int(httpx.get(f"{stack.url}/v1/tools/count", params=params, headers=headers).json())

    # The oldest of six custom tools, newest first, two to a page: found on the first page.
    assert names(search="TOOL_0", limit=2) == ["tool_0"]
    assert names(names=["tool_1", "tool_4"], limit=1) == ["tool_4"]
    assert sorted(names(tool_ids=f"{made[2].id},{made[3].id}")) == ["tool_2", "tool_3"]
    assert set(names(tool_types=["custom"], limit=50)) == {f"tool_{n}" for n in range(6)}
    builtins = names(return_only_letta_tools=True, limit=50)
    assert builtins and not any(n.startswith("tool_") for n in builtins)
    assert not set(names(exclude_tool_types=["custom"], limit=50)) & {"tool_0"}
    # `_` and `%` are searched as written, not as wildcards (`tool_` once matched
    # `run_code_with_tools`).
    assert count(tool_types=["custom"]) == 6 and count(search="tool_") == 6
    assert names(search="%", limit=50) == [] and names(search="code_w", limit=50) == [
        "run_code_with_tools"
    ]
    assert count(exclude_letta_tools=True) == 6
    assert count() == 6 + count(return_only_letta_tools=True)
