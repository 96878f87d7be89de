"""Agent files both ways through letta-client 1.5.0: Letta 0.16.1's own exports (the
fixtures, as they are) imported, and Cairn's exports shaped as Letta's and imported back
into an agent whose next step sends the model the same request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from letta_client import BadRequestError, Letta, UnprocessableEntityError

from tests.api.conftest import Stack

# Real material from a Letta 0.16.1 server, copied unchanged (its README says how it was made).
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "letta-0.16.1"
EVERYTHING: Any = ["agent.blocks", "agent.tags", "agent.tools", "agent.managed_group"]
LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def upload(client: Letta, data: bytes | str, **options: Any) -> list[str]:
    raw = data.encode() if isinstance(data, str) else data
    return client.agents.import_file(file=("agent.af", raw), **options).agent_ids


@pytest.mark.parametrize("name", ["agent-A", "agent-B", "agent-C", "agent-C-sleeptime"])
def test_letta_exports_import_with_their_memory_tools_rules_and_window(
    stack: Stack, name: str
) -> None:
    client = stack.client()
    raw = (FIXTURES / f"{name}.af").read_bytes()
    file = json.loads(raw)
    created = upload(client, raw)
    assert len(created) == len(file["agents"])
    blocks_by_id = {b["id"]: b for b in file["blocks"]}
    for entry, agent_id in zip(file["agents"], created, strict=True):
        agent = client.agents.retrieve(agent_id, include=EVERYTHING)
        assert agent.name == entry["name"] + "_copy" and agent.agent_type == entry["agent_type"]
        assert agent.system == entry["system"] and sorted(agent.tags) == sorted(entry["tags"])
        wanted = {
            (blocks_by_id[b]["label"], blocks_by_id[b]["value"], blocks_by_id[b]["limit"])
            for b in entry["block_ids"]
        }
        assert {(b.label, b.value, b.limit) for b in agent.memory.blocks} == wanted
        tools_by_id = {t["id"]: t for t in file["tools"]}
        assert sorted(t.name for t in agent.tools) == sorted(
            tools_by_id[t]["name"] for t in entry["tool_ids"]
        )
        rules = {(r.type, r.tool_name) for r in agent.tool_rules or ()}
        assert rules == {(r["type"], r["tool_name"]) for r in entry["tool_rules"] or ()}
        # The context window in the file's order, the system message first.
        texts = {m["id"]: m for m in entry["messages"]}
        assert len(agent.message_ids or ()) == len(entry["in_context_message_ids"])
        shown = client.agents.messages.list(agent_id, limit=1000, order="asc")
        first = texts[entry["in_context_message_ids"][0]]
        assert first["role"] == "system"
        assert len(list(shown)) >= len(entry["messages"]) - 1  # the system message is not listed
    custom = [t for t in file["tools"] if t["tool_type"] == "custom"]
    for tool in custom:
        stored = next(t for t in client.tools.list(name=tool["name"]))
        assert stored.source_code == tool["source_code"]
    if file["groups"]:
        primary = client.agents.retrieve(created[0], include=["agent.managed_group"])
        assert primary.multi_agent_group is not None
        assert primary.multi_agent_group.agent_ids == created[1:]


def test_an_imported_custom_tool_runs_in_the_sandbox(stack: Stack) -> None:
    client = stack.client()
    (agent_b,) = upload(client, (FIXTURES / "agent-B.af").read_bytes())
    ran = client.agents.tools.run(
        "word_stats", agent_id=agent_b, args={"text": "a b c", "uppercase": False}
    )
    assert ran.status == "success" and "words=3" in str(ran.func_return)


def _shape(value: Any) -> Any:
    """A JSON value's shape: the keys of objects and the type of everything else."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


def test_cairns_export_has_the_shape_of_letta_s_and_imports_into_the_same_next_request(
    stack: Stack,
) -> None:
    client = stack.client()
    agent = client.agents.create(
        name="exported",
        llm_config=LLM,
        agent_type="memgpt_v2_agent",  # type: ignore[arg-type]
        memory_blocks=[
            {"label": "human", "value": "Ada, likes tea"},
            {"label": "persona", "value": "Sam", "limit": 3000},
        ],
        tags=["af"],
    )
    stack.fake.reply("", ("send_message", {"message": "Hello Ada."}))
    client.agents.messages.create(agent.id, input="hi there")
    text = client.agents.export_file(agent.id)
    exported = json.loads(text)

    theirs = fixture("agent-B.af")
    assert set(exported) == set(theirs)
    assert set(exported["agents"][0]) == set(theirs["agents"][0])
    assert set(exported["blocks"][0]) == set(theirs["blocks"][0])
    assert set(exported["tools"][0]) == set(theirs["tools"][0])
    message_keys = set().union(*(m.keys() for m in theirs["agents"][0]["messages"]))
    for message in exported["agents"][0]["messages"]:
        assert set(message) <= message_keys, set(message) - message_keys
    assert exported["metadata"] == theirs["metadata"]
    ids = [m["id"] for m in exported["agents"][0]["messages"]]
    assert ids == [f"message-{n}" for n in range(len(ids))]

    def preview(agent_id: str) -> object:  # no SDK method for this route of Letta's API
        path = f"/v1/agents/{agent_id}/messages/preview-raw-payload"
        return client.post(path, body={"input": "and now?"}, cast_to=object)

    before = preview(agent.id)
    (copy,) = upload(client, text, append_copy_suffix=False)
    after = preview(copy)
    assert client.agents.retrieve(copy).name == "exported"
    assert after == before  # the same system prompt, tools and history, in the same order


def test_import_options_behave_as_letta_s(stack: Stack) -> None:
    client = stack.client()
    raw = (FIXTURES / "agent-B.af").read_bytes()
    (first,) = upload(client, raw, name="renamed")
    assert client.agents.retrieve(first).name == "renamed"
    (second,) = upload(client, raw, override_name="old-style")
    assert client.agents.retrieve(second).name == "old-style"
    (third,) = upload(client, raw, append_copy_suffix=False)
    assert client.agents.retrieve(third).name == "fixture-agent-b"
    for option in ("embedding", "override_embedding_handle"):
        (moved,) = upload(client, raw, **{option: "openai/text-embedding-3-large"})
        config = client.agents.retrieve(moved).embedding_config
        assert config is not None and config.embedding_model == "text-embedding-3-large"
    # Letta 0.16.1 takes strip_messages and never passes it on: the messages come along.
    (kept,) = upload(client, raw, strip_messages=True)
    assert len(client.agents.retrieve(kept).message_ids or ()) == 16

    tool = next(iter(client.tools.list(name="word_stats")))
    changed = (tool.source_code or "").replace("words=", "WORDS=")
    client.tools.upsert(source_code=changed)
    upload(client, raw, override_existing_tools=False)
    assert "WORDS=" in (client.tools.retrieve(tool.id).source_code or "")
    upload(client, raw)  # Letta's default: the file's source wins
    assert "WORDS=" not in (client.tools.retrieve(tool.id).source_code or "")
    assert len(list(client.tools.list(name="word_stats"))) == 1  # upserted by name

    with pytest.raises(BadRequestError, match="secrets"):
        upload(client, raw, secrets="not json")


def test_bad_files_are_refused_and_nothing_is_created(stack: Stack) -> None:
    client = stack.client()
    before = len(list(client.agents.list()))
    with pytest.raises(BadRequestError, match="Corrupted"):
        upload(client, b"{not json")
    with pytest.raises(BadRequestError, match="Legacy"):
        upload(client, json.dumps({"name": "old", "messages": []}))
    broken = fixture("agent-A.af")
    broken["agents"][0]["block_ids"].append("block-99")
    with pytest.raises(UnprocessableEntityError, match="block-99"):
        upload(client, json.dumps(broken))
    late = fixture("agent-A.af")
    late["agents"][0]["messages"][-1]["role"] = "nobody"  # fails after the tools and blocks
    with pytest.raises(UnprocessableEntityError, match="messages"):
        upload(client, json.dumps(late))
    assert len(list(client.agents.list())) == before
    assert [b.label for b in client.blocks.list(label="preferences")] == []
    with pytest.raises(BadRequestError):
        client.agents.export_file(
            client.agents.create(llm_config=LLM).id,  # type: ignore[arg-type]
            use_legacy_format=True,
        )


def test_an_agent_file_with_no_messages_imports_an_agent_that_answers(stack: Stack) -> None:
    client = stack.client()
    file = fixture("agent-A.af")
    for agent in file["agents"]:
        agent["messages"], agent["in_context_message_ids"] = [], []
    (agent_id,) = upload(client, json.dumps(file))
    stack.fake.reply("Hello, fresh start.")
    answer = client.agents.messages.create(agent_id, input="hi")
    assert answer.messages[-1].content == "Hello, fresh start."
    sent = stack.fake.requests[-1].body["messages"]
    assert sent[0]["role"] == "system" and "<memory_blocks>" in sent[0]["content"]


def test_a_group_naming_another_organizations_block_is_refused_and_nothing_stored(
    stack: Stack,
) -> None:
    from cairn.domain import Block, Organization
    from cairn.store import blocks, tenancy

    with stack.runtime.db.transaction() as conn:
        other = tenancy.create_organization(conn, Organization(name="victim"))
        theirs = blocks.create(conn, Block(organization_id=other.id, label="secret", value="x"))
    client = stack.client()
    file = fixture("agent-C.af")
    file["groups"][0]["shared_block_ids"] = [theirs.id]
    with pytest.raises(UnprocessableEntityError) as err:
        upload(client, json.dumps(file))
    assert theirs.id in str(err.value.body)
    assert list(client.agents.list()) == [] and list(client.blocks.list()) == []
    assert list(client.groups.list()) == []


@pytest.mark.parametrize("name", ["agent-A", "agent-B", "agent-C"])
def test_an_imported_letta_agent_is_asked_with_the_texts_it_had_in_letta(
    stack: Stack, name: str
) -> None:
    """Its first request carries the system prompt of its file, word for word (tool rules in
    Letta's words and order), and each tool's schema as the file has it (Letta's own texts
    for the built-ins), plus the arguments Letta adds at run time (`thinking` first, with
    Letta's description, for a model that puts its thoughts in the call)."""
    client = stack.client()
    file = fixture(f"{name}.af")
    entry = file["agents"][0]
    agent_id = upload(client, json.dumps(file))[0]
    path = f"/v1/agents/{agent_id}/messages/preview-raw-payload"
    payload: Any = client.post(path, body={"input": "hi"}, cast_to=object)
    messages = {m["id"]: m for m in entry["messages"]}
    system = messages[entry["in_context_message_ids"][0]]
    assert payload["messages"][0]["content"] == "".join(c["text"] for c in system["content"])
    sent = {t["function"]["name"]: t["function"] for t in payload["tools"]}
    thoughts = entry["llm_config"].get("put_inner_thoughts_in_kwargs")
    for tool in (t for t in file["tools"] if t["id"] in entry["tool_ids"]):
        schema, got = tool["json_schema"], sent[tool["name"]]
        assert got["description"] == schema["description"], tool["name"]
        # Strict, as Letta's OpenAI client sends every tool: every property required.
        assert got["strict"] is True and got["parameters"]["additionalProperties"] is False
        properties = dict(got["parameters"]["properties"])
        required = list(got["parameters"]["required"])
        assert required == list(properties)
        if thoughts:
            assert properties.pop("thinking") == {
                "type": "string",
                "description": "Deep inner monologue private to you only.",
            }
            assert required.pop(0) == "thinking"
        if properties.pop("request_heartbeat", None) is not None:
            required.remove("request_heartbeat")
        expected = schema["parameters"]
        assert properties == expected["properties"], tool["name"]
        assert set(expected.get("required", [])) <= set(required), tool["name"]
