"""Every method of letta-client 1.5.0 for the resources Cairn serves, called against the
local stack; every list walked by the SDK's own auto-pager across at least two pages.

The methods are enumerated from the installed SDK, not written down here, so a method the
SDK grows shows up as missing. Those Cairn does not serve are listed with their reason,
and each must also be listed in docs/api.md's table of what is not served. The tests run
in file order and the last one checks that nothing was left out.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import pytest
from letta_client import Letta, NotFoundError
from pydantic import BaseModel

from cairn.api.openapi import letta_document, shape
from tests.api.conftest import Stack
from tests.fakes.llm_server import call
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
RESOURCES = (
    "agents",
    "blocks",
    "tools",
    "runs",
    "steps",
    "groups",
    "passages",
    "archives",
    "tags",
    "messages",
    "batches",
    "models",
    "health",
    "identities",
    "mcp_servers",
    "folders",
)
API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"

# Method -> why Cairn does not serve it. Mirrored in docs/api.md ("Not served").
NOT_SERVED: dict[str, str] = {}

called: set[str] = set()


def sdk_methods(client: Letta) -> set[str]:
    """Every public method of the SDK's resources named in RESOURCES."""
    found: set[str] = set()

    def walk(obj: Any, path: str) -> None:
        for name in dir(obj):
            if name.startswith("_") or name.startswith("with_"):
                continue
            value = getattr(obj, name)
            if type(value).__module__.startswith("letta_client.resources"):
                walk(value, f"{path}.{name}")
            elif inspect.ismethod(value):
                found.add(f"{path}.{name}")

    for resource in RESOURCES:
        value = getattr(client, resource)
        if inspect.ismethod(value):
            found.add(resource)
        else:
            walk(value, resource)
    return found


def recording(client: Letta) -> Letta:
    """The client with every resource method noting its own name in `called` when used."""

    def wrap(obj: Any, path: str) -> None:
        for name in dir(obj):
            if name.startswith("_") or name.startswith("with_"):
                continue
            value = getattr(obj, name)
            if type(value).__module__.startswith("letta_client.resources"):
                wrap(value, f"{path}.{name}")
            elif inspect.ismethod(value):
                setattr(obj, name, _noting(value, f"{path}.{name}"))

    for resource in RESOURCES:
        value = getattr(client, resource)
        if inspect.ismethod(value):
            object.__setattr__(client, resource, _noting(value, resource))
        else:
            wrap(value, resource)
    return client


def _noting(method: Any, name: str) -> Any:
    @functools.wraps(method)
    def noted(*args: Any, **kwargs: Any) -> Any:
        called.add(name)
        return method(*args, **kwargs)

    return noted


def walk_pages(page: Any) -> list[Any]:
    """All items through the SDK's auto-pager, which must fetch at least two pages."""
    pages = list(page.iter_pages())
    items = [item for p in pages for item in p._get_page_items()]
    assert len([p for p in pages if p._get_page_items()]) >= 2, f"one page only: {items}"
    ids = [getattr(i, "id", i) for i in items]
    assert len(ids) == len(set(ids)), f"a page repeated: {ids}"  # the pager must move on
    return items


_LETTA = letta_document()
_SUCCESS = {
    (method.upper(), shape(path)): op["responses"]["200"]["content"]["application/json"]["schema"]
    for path, ops in _LETTA["paths"].items()
    for method, op in ops.items()
    if "application/json" in op["responses"].get("200", {}).get("content", {})
}


def held_to_letta_shapes(response: httpx.Response) -> None:
    """Each success answer checked against the schema Letta 0.16.1 declares for it."""
    request = response.request
    key = (
        request.method,
        shape(re.sub(r"/v1/(\w+)/[^/]+-[0-9a-f-]{36}", r"/v1/\1/{}", request.url.path)),
    )
    key = (key[0], re.sub(r"/(?:[a-z]+-[0-9a-f-]{36}|[^/{}]+(?=/run$))", "/{}", key[1]))
    # Letta declares its export a JSON string; the server sends the file's object (the
    # fixtures hold its exact bytes): the real answer wins, checked in test_agent_files.
    schema = None if key == ("GET", "/v1/agents/{}/export") else _SUCCESS.get(key)
    json_body = response.headers.get("content-type", "").startswith("application/json")
    if schema is None or not json_body or not 200 <= response.status_code < 300:
        return
    response.read()
    body = response.json()
    validator = jsonschema_rs.validator_for({**schema, "components": _LETTA["components"]})
    for error in validator.iter_errors(body):
        violations.append(
            f"{key[0]} {key[1]}: {error.message[:300]} at {list(error.instance_path)}"
        )


violations: list[str] = []


@pytest.fixture
def client(stack: Stack) -> Iterator[Letta]:
    checked = httpx.Client(event_hooks={"response": [held_to_letta_shapes]}, timeout=30)
    violations.clear()
    yield recording(stack.client().with_options(http_client=checked))
    assert violations == [], "\n".join(sorted(set(violations)))


def agent_with_history(stack: Stack, client: Letta, **extra: Any) -> Any:
    agent = client.agents.create(
        llm_config=LLM,  # type: ignore[arg-type]
        memory_blocks=[{"label": "human", "value": "Ada"}, {"label": "persona", "value": "Sam"}],
        tags=["coverage", "sdk"],
        **extra,
    )
    stack.fake.reply("", call("conversation_search", query="tea"))
    stack.fake.reply("Nothing yet.")
    client.agents.messages.create(agent.id, input="what about tea?")
    return agent


def test_agents_and_their_memory(stack: Stack, client: Letta) -> None:
    first = agent_with_history(stack, client)
    second = client.agents.create(llm_config=LLM, tags=["sdk"])  # type: ignore[arg-type]
    assert {a.id for a in walk_pages(client.agents.list(limit=1))} == {first.id, second.id}
    assert client.agents.retrieve(first.id).name == first.name
    assert client.agents.update(first.id, description="covered").description == "covered"
    assert len(walk_pages(client.agents.blocks.list(agent_id=first.id, limit=1))) == 2
    assert client.agents.blocks.retrieve("human", agent_id=first.id).value == "Ada"
    client.agents.blocks.update("human", agent_id=first.id, value="Ada L.")
    extra = client.blocks.create(label="project", value="Cairn")
    client.agents.blocks.attach(extra.id, agent_id=first.id)
    client.agents.blocks.attach(extra.id, agent_id=second.id)
    assert len(walk_pages(client.blocks.agents.list(extra.id, limit=1))) == 2
    client.agents.blocks.detach(extra.id, agent_id=second.id)
    assert len(walk_pages(client.agents.tools.list(agent_id=first.id, limit=1))) == 3
    messages = walk_pages(client.agents.messages.list(first.id, limit=1, order="asc"))
    assert "what about tea?" in [getattr(m, "content", None) for m in messages]
    client.agents.passages.create(first.id, text="Ada takes tea at five", tags=["habit"])
    client.agents.passages.create(first.id, text="Ada rides a bicycle")
    # The SDK returns this list whole (no pager): two pages by hand.
    passages = client.agents.passages.list(first.id, limit=1)
    passages += client.agents.passages.list(first.id, limit=1, after=passages[0].id)
    assert len({p.id for p in passages}) == 2
    assert client.agents.passages.search(first.id, query="tea").results
    client.agents.passages.delete(passages[0].id, agent_id=first.id)
    # Tags are plain strings, which the SDK cannot page by id: two pages by hand.
    assert client.tags.list(limit=1) == ["coverage"]
    assert client.tags.list(limit=1, after="coverage") == ["sdk"]
    client.agents.messages.reset(first.id)
    client.agents.delete(second.id)
    with pytest.raises(NotFoundError):
        client.agents.retrieve(second.id)


def test_messages_streams_runs_and_steps(stack: Stack, client: Letta) -> None:
    agent = agent_with_history(stack, client)
    stack.fake.reply("Streamed.")
    events = list(client.agents.messages.stream(agent.id, input="stream please"))
    assert any(getattr(e, "content", None) == "Streamed." for e in events)
    stack.fake.reply("Later.")
    queued = client.agents.messages.create_async(agent.id, input="in the background")
    runs = walk_pages(client.runs.list(agent_id=agent.id, limit=1))
    assert queued.id in {r.id for r in runs}
    first = next(r for r in runs if r.metadata and r.metadata.get("run_type") == "send_message")
    assert client.runs.retrieve(first.id).status == "completed"
    assert len(walk_pages(client.runs.messages.list(first.id, limit=1))) >= 3
    steps = walk_pages(client.runs.steps.list(first.id, limit=1))
    assert client.runs.usage.retrieve(first.id).total_tokens > 0  # type: ignore[operator]
    assert len(walk_pages(client.steps.list(agent_id=agent.id, limit=1))) >= 2
    assert client.steps.retrieve(steps[0].id).run_id == first.id
    tool_step = next(s for s in steps if len(client.steps.messages.list(s.id).items) >= 2)
    walk_pages(client.steps.messages.list(tool_step.id, limit=1))
    rated = client.steps.feedback.create(tool_step.id, feedback="positive", tags=["useful"])
    assert (rated.feedback, rated.tags) == ("positive", ["useful"])
    assert client.steps.retrieve(tool_step.id).feedback == "positive"
    timed = client.steps.metrics.retrieve(tool_step.id)
    assert timed.step_ns and timed.llm_request_ns and timed.tool_execution_ns
    assert timed.step_ns >= timed.llm_request_ns + timed.tool_execution_ns
    assert client.steps.trace.retrieve(tool_step.id) is None  # CAIRN_PROVIDER_TRACES is off
    # GET /v1/messages/: every agent's messages; the SDK returns the list whole, so by hand.
    newest = client.messages.list(limit=2)
    older = client.messages.list(limit=2, after=newest[-1].id)
    assert newest and older and {m.id for m in newest}.isdisjoint({m.id for m in older})
    assert client.messages.search(query="tea")  # full text over every agent
    assert isinstance(client.agents.messages.cancel(agent.id), dict | BaseModel)
    stack.fake.reply("A summary of the talk so far.")
    client.agents.messages.compact(agent.id)  # POST .../summarize: 204


def test_tools(stack: Stack, client: Letta) -> None:
    def shout(text: str) -> str:
        """Say it loudly.

        Args:
            text: What to say.
        """
        return text.upper()

    def whisper(text: str) -> str:
        """Say it softly.

        Args:
            text: What to say.
        """
        return text.lower()

    made = client.tools.create_from_function(func=shout)
    again = client.tools.upsert_from_function(func=shout)
    assert made.id == again.id
    client.tools.upsert(source_code=inspect.getsource(whisper))
    assert client.tools.retrieve(made.id).name == "shout"
    assert client.tools.update(made.id, description="Loud.").description == "Loud."
    assert len(walk_pages(client.tools.list(limit=1))) >= 4
    found = client.tools.search(query="loudly")  # full text over names and descriptions
    assert [r.tool.name for r in found] == ["shout"]
    answer = httpx.post(  # POST /v1/tools/run: in Letta's API, not in this SDK
        f"{stack.url}/v1/tools/run",
        json={"source_code": inspect.getsource(shout), "args": {"text": "hi"}},
        headers={"Authorization": f"Bearer {stack.key}"},
    )
    held_to_letta_shapes(answer)  # a ToolReturnMessage, as Letta declares (it had no id)
    ran = answer.json()
    assert ran["status"] == "success" and ran["tool_return"] == "HI" and ran["id"]
    assert ran["message_type"] == "tool_return_message" and ran["name"] == "shout"
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    client.agents.tools.attach(made.id, agent_id=agent.id)
    done = client.agents.tools.run("shout", agent_id=agent.id, args={"text": "ok"})
    assert done.func_return == "OK"
    client.agents.tools.update_approval("shout", agent_id=agent.id, body_requires_approval=True)
    client.agents.tools.detach(made.id, agent_id=agent.id)
    assert client.tools.add(tool=_base_tool()).name == "reverse"
    client.tools.delete(made.id)
    with pytest.raises(NotFoundError):
        client.tools.retrieve(made.id)


def _base_tool() -> Any:
    from letta_client.types.tool import BaseTool

    class Reverse(BaseModel):
        text: str

    class ReverseTool(BaseTool):  # type: ignore[misc]
        name: str = "reverse"
        args_schema: type[BaseModel] = Reverse
        description: str = "Reverse the text"
        tags: list[str] = ["sdk"]

        def run(self, text: str) -> str:
            """Reverse the text.

            Args:
                text: The text to reverse.
            """
            return text[::-1]

    return ReverseTool(id="tool-00000000-0000-4000-8000-000000000000")  # the SDK model needs one


def test_blocks_groups_archives_and_models(stack: Stack, client: Letta) -> None:
    for label in ("one", "two"):
        client.blocks.create(label=label, value=label)
    listed = walk_pages(client.blocks.list(limit=1))
    assert client.blocks.retrieve(listed[0].id).id == listed[0].id
    client.blocks.update(listed[0].id, value="changed")
    client.blocks.delete(listed[1].id)

    primaries = [
        client.agents.create(llm_config=LLM, enable_sleeptime=True)  # type: ignore[arg-type]
        for _ in range(2)
    ]
    groups = walk_pages(client.groups.list(limit=1))
    assert len(groups) == 2 and client.groups.retrieve(groups[0].id).id == groups[0].id
    client.groups.update(
        groups[0].id,
        manager_config={
            "manager_type": "sleeptime",  # type: ignore[arg-type]
            "sleeptime_agent_frequency": 3,
        },
    )
    assert [g.id for g in client.agents.groups.list(primaries[0].id)] in (
        [groups[0].id],
        [groups[1].id],
    )

    archive = client.archives.create(name="shared notes")
    client.archives.create(name="other notes")
    assert len(walk_pages(client.archives.list(limit=1))) == 2
    assert client.archives.retrieve(archive.id).name == "shared notes"
    assert client.archives.update(archive.id, description="d").description == "d"
    note = client.archives.passages.create(archive.id, text="The launch is on March 9")
    reader = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    client.agents.archives.attach(archive.id, agent_id=reader.id)
    found = client.passages.search(query="launch", agent_id=reader.id)
    assert [r.passage.id for r in found] == [note.id]
    client.agents.archives.detach(archive.id, agent_id=reader.id)
    client.archives.passages.delete(note.id, archive_id=archive.id)
    client.archives.delete(archive.id)

    assert [m.handle for m in client.models.list()]  # the configured providers' models
    assert isinstance(client.models.embeddings.list(), list)
    assert client.health().status == "ok"


def test_multi_agent_groups(stack: Stack, client: Letta) -> None:
    ada, bob = (client.agents.create(name=n, llm_config=LLM).id for n in ("ada", "bob"))  # type: ignore[arg-type]
    group = client.groups.create(agent_ids=[ada, bob], description="pair")
    stack.fake.reply("Ada here.")
    stack.fake.reply("Bob here.")
    reply = client.groups.messages.create(group.id, messages=[{"role": "user", "content": "hi"}])
    assert [m.message_type for m in reply.messages].count("assistant_message") == 2
    stack.fake.reply("Ada again.")
    stack.fake.reply("Bob again.")
    more = [{"role": "user", "content": "more"}]
    events = list(client.groups.messages.stream(group.id, messages=more))  # type: ignore[list-item]
    said = [getattr(e, "content", None) for e in events if e.message_type == "assistant_message"]
    assert said == ["Ada again.", "Bob again."]
    said = walk_pages(client.groups.messages.list(group.id, limit=2, order="asc"))
    first = next(m for m in said if m.message_type == "assistant_message")
    client.groups.messages.update(
        first.id, group_id=group.id, content="Ada, edited.", message_type="assistant_message"
    )
    client.groups.messages.reset(group.id)
    assert list(client.groups.messages.list(group.id)) == []
    client.groups.delete(group.id)


def test_message_batches(stack: Stack, client: Letta) -> None:
    ada, bob = (client.agents.create(llm_config=LLM).id for _ in range(2))  # type: ignore[arg-type]
    stack.fake.reply("slow", delay=1.0)
    stack.fake.reply("slow", delay=1.0)
    first = client.batches.create(requests=[{"agent_id": ada, "input": "one"}])
    second = client.batches.create(requests=[{"agent_id": bob, "input": "two"}])
    assert {b.id for b in walk_pages(client.batches.list(limit=1))} == {first.id, second.id}
    client.batches.cancel(second.id)
    eventually(lambda: client.batches.retrieve(first.id).status != "running")
    said = list(client.batches.messages.list(first.id, limit=1).iter_pages())
    assert len(said) >= 2 and {m.agent_id for p in said for m in p.messages} == {ada}


def test_agent_files(stack: Stack, client: Letta) -> None:
    agent = client.agents.create(name="filed", llm_config=LLM)  # type: ignore[arg-type]
    text = client.agents.export_file(agent.id)
    (copy,) = client.agents.import_file(file=("filed.af", text.encode())).agent_ids
    assert client.agents.retrieve(copy).name == "filed_copy"


def test_a_background_run_is_streamed_again(stack: Stack, client: Letta) -> None:
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("Streamed once.")
    run = client.agents.messages.create_async(agent.id, input="hi")
    events = list(client.runs.messages.stream(run.id))
    assert [e.message_type for e in events][-2:] == ["stop_reason", "usage_statistics"]


def test_identities(stack: Stack, client: Letta) -> None:
    agents = [client.agents.create(llm_config=LLM).id for _ in range(3)]  # type: ignore[arg-type]
    blocks = [client.blocks.create(label=f"b{n}", value="v").id for n in range(3)]
    made = [
        client.identities.create(identifier_key=f"user-{n}", name=f"U{n}", identity_type="user")
        for n in range(3)
    ]
    assert len(walk_pages(client.identities.list(limit=2))) == 3
    ada = made[0]
    client.identities.update(ada.id, agent_ids=agents[:2], block_ids=blocks)
    client.agents.identities.attach(ada.id, agent_id=agents[2])
    assert len(walk_pages(client.identities.agents.list(ada.id, limit=2))) == 3
    assert len(walk_pages(client.identities.blocks.list(ada.id, limit=2))) == 3
    client.agents.identities.detach(ada.id, agent_id=agents[2])
    client.identities.properties.upsert(
        ada.id, body=[{"key": "k", "value": {"a": 1}, "type": "json"}]
    )
    kept = client.identities.upsert(identifier_key="user-0", name="Ada", identity_type="user")
    assert kept.id == ada.id and client.identities.retrieve(ada.id).name == "Ada"
    client.identities.delete(made[1].id)
    with pytest.raises(NotFoundError):
        client.identities.retrieve(made[1].id)


def test_mcp_servers(stack: Stack, client: Letta) -> None:
    """Against a real MCP server (the `mcp` SDK's, streamable HTTP), every method, each
    answer held to Letta's shape."""
    from tests.fakes.mcp_server import mcp_server

    with mcp_server(token="sdk-token-0123456789") as fake:
        settings = {
            "mcp_server_type": "streamable_http",
            "server_url": fake.url,
            "auth_header": "Authorization",
            "auth_token": "Bearer sdk-token-0123456789",
        }
        made = client.mcp_servers.create(server_name="calc", config=settings)  # type: ignore[arg-type]
        assert [s.id for s in client.mcp_servers.list()] == [made.id]
        assert client.mcp_servers.retrieve(made.id).server_name == "calc"  # type: ignore[union-attr]
        renamed = client.mcp_servers.update(made.id, config={}, server_name="calculator")  # type: ignore[arg-type]
        assert renamed.server_name == "calculator"  # type: ignore[union-attr]
        tools = client.mcp_servers.tools.list(made.id)
        add = next(t for t in tools if t.name == "add")
        assert client.mcp_servers.tools.retrieve(add.id, mcp_server_id=made.id).id == add.id
        ran = client.mcp_servers.tools.run(add.id, mcp_server_id=made.id, args={"a": 1, "b": 2})
        assert ran.func_return == "3"
        assert client.mcp_servers.refresh(made.id) == {"added": [], "updated": [], "deleted": []}
        client.mcp_servers.delete(made.id)
        assert client.mcp_servers.list() == []


def test_folders(stack: Stack, client: Letta) -> None:
    made = [client.folders.create(name=f"f{n}") for n in range(3)]
    assert [f.id for f in walk_pages(client.folders.list(limit=2))] == [f.id for f in made]
    assert client.folders.retrieve(made[0].id).name == "f0"
    assert client.folders.update(made[0].id, description="d").description == "d"
    agents = [client.agents.create(llm_config=LLM).id for _ in range(3)]  # type: ignore[arg-type]
    for agent_id in agents:
        client.agents.folders.attach(made[0].id, agent_id=agent_id)
        client.agents.folders.attach(made[1].id, agent_id=agent_id)
    assert sorted(client.folders.agents.list(made[0].id)) == sorted(agents)
    assert len(walk_pages(client.agents.folders.list(agents[0], limit=1))) == 2
    client.agents.folders.detach(made[1].id, agent_id=agents[0])
    uploaded = [
        client.folders.files.upload(made[0].id, file=(f"n{n}.txt", b"note", "text/plain"))
        for n in range(3)
    ]
    assert len(walk_pages(client.folders.files.list(made[0].id, limit=2))) == 3
    eventually(  # the files' jobs, on the queue
        lambda: (
            {f.processing_status for f in client.folders.files.list(made[0].id)} == {"completed"}
        )
    )
    assert client.agents.files.open(uploaded[1].id, agent_id=agents[0]) == []
    assert len(walk_pages(client.agents.files.list(agents[0], limit=2))) == 3
    client.agents.files.close(uploaded[1].id, agent_id=agents[0])
    # Uploads into an attached folder opened once read, as Letta opens them.
    assert sorted(client.agents.files.close_all(agents[0])) == ["f0/n0.txt", "f0/n2.txt"]
    client.folders.files.delete(uploaded[0].id, folder_id=made[0].id)
    client.folders.delete(made[2].id)
    assert [f.id for f in client.folders.list()] == [made[0].id, made[1].id]


def test_every_sdk_method_is_exercised_or_listed_as_not_served(stack: Stack) -> None:
    methods = sdk_methods(stack.client())
    assert set(NOT_SERVED) <= methods, set(NOT_SERVED) - methods  # no stale exclusions
    missing = methods - called - set(NOT_SERVED)
    assert missing == set(), f"SDK methods no test calls: {sorted(missing)}"
    readme = API_DOC.read_text()
    unlisted = [m for m in NOT_SERVED if not re.search(rf"`{re.escape(m)}`", readme)]
    assert unlisted == [], f"not served but not in docs/api.md: {unlisted}"


def test_the_context_overview_is_letta_s_shape(client: Letta, stack: Stack) -> None:
    """`GET /v1/agents/{id}/context` (not in this SDK): only the fields Letta's
    ContextWindowOverview and its Message list (both forbid others); it sent the agent's
    archive id and each message's organization and sequence."""
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    answer = httpx.get(
        f"{stack.url}/v1/agents/{agent.id}/context",
        headers={"Authorization": f"Bearer {stack.key}"},
    )
    assert answer.status_code == 200 and answer.json()["messages"]
    held_to_letta_shapes(answer)  # the fixture's teardown fails on any violation
