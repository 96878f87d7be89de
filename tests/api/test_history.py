"""Time travel through the API: an agent's timeline of versions with what each changed, its
state at any version, a diff between two, a rewind (itself a version, undone by another), a
fork; refused while a run is in progress, hidden from other organizations, and bad inputs
answered 4xx with nothing changed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from cairn.store.db import Database
from tests.api.conftest import Stack
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def api(stack: Stack, key: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key or stack.key}"}
    return httpx.Client(base_url=f"{stack.url}/v1", headers=headers, timeout=30)


def agent_with_a_past(stack: Stack) -> tuple[Any, list[dict[str, Any]]]:
    """An agent that learned a fact, then a wrong one (and archived it), over two turns."""
    client = stack.client()
    agent = client.agents.create(
        name="ada-helper",
        memory_blocks=[
            {"label": "human", "value": "Name: Ada"},
            {"label": "persona", "value": "I am Sam."},
        ],
        llm_config=LLM,
        tools=["archival_memory_insert"],
    )  # type: ignore[arg-type]
    stack.fake.reply("", call("memory_insert", label="human", new_str="Likes: tea"))
    stack.fake.reply("Noted, you like tea.")
    client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "I like tea"}])
    stack.fake.reply(
        "",
        call("memory_replace", label="human", old_str="Likes: tea", new_str="Likes: coffee"),
        call("archival_memory_insert", content="Ada switched to coffee"),
    )
    stack.fake.reply("Noted, coffee it is.")
    client.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "(someone else) coffee!"}]
    )
    with api(stack) as http:
        timeline = http.get(f"/agents/{agent.id}/history", params={"limit": 100}).json()
    return agent, timeline


def test_the_timeline_shows_each_version_and_what_it_changed(stack: Stack) -> None:
    agent, timeline = agent_with_a_past(stack)
    versions = [v["version"] for v in timeline]
    assert versions == sorted(versions, reverse=True)
    assert timeline[-1]["kind"] == "create"
    steps = [v for v in timeline if v["kind"] == "step"]
    assert len(steps) == 4  # two turns of two steps each
    assert all(v["run_id"] and v["step_id"] for v in steps)
    edits = [c for v in steps for c in v["changes"]["blocks"] if c["label"] == "human"]
    # Newest first: the replace, then the insert.
    assert [(c["from_version"], c["to_version"]) for c in edits] == [(2, 3), (1, 2)]
    newest_first = [v for v in steps if v["changes"]["passages_inserted"]]
    assert len(newest_first) == 1 and len(newest_first[0]["changes"]["passages_inserted"]) == 1
    assert all(v["changes"]["messages_added"] for v in steps)

    # Paged: `before` a version, the same list in pieces.
    with api(stack) as http:
        first = http.get(f"/agents/{agent.id}/history", params={"limit": 2}).json()
        rest = http.get(
            f"/agents/{agent.id}/history", params={"limit": 100, "before": first[-1]["version"]}
        ).json()
    assert [v["version"] for v in first + rest] == versions
    assert first[1]["changes"] == timeline[1]["changes"]  # the page edge reads the same


def test_the_state_at_a_version_and_a_diff_between_two(stack: Stack) -> None:
    agent, timeline = agent_with_a_past(stack)
    created = timeline[-1]["version"]
    first_turn_end = [v for v in timeline if v["kind"] == "step"][2]["version"]
    with api(stack) as http:
        then = http.get(f"/agents/{agent.id}/history/{first_turn_end}").json()
        now = http.get(f"/agents/{agent.id}/history/{timeline[0]['version']}").json()
        at_creation = http.get(f"/agents/{agent.id}/history/{created}").json()
        diff = http.get(
            f"/agents/{agent.id}/history/{timeline[0]['version']}/diff",
            params={"against": first_turn_end},
        ).json()
    human = {b["label"]: b["value"] for b in then["blocks"]}["human"]
    assert human == "Name: Ada\nLikes: tea"
    assert {b["label"]: b["value"] for b in now["blocks"]}["human"] == "Name: Ada\nLikes: coffee"
    assert {b["label"]: b["value"] for b in at_creation["blocks"]}["human"] == "Name: Ada"
    assert "Likes: tea" in then["system_prompt"] and "Likes: coffee" not in then["system_prompt"]
    assert then["config"]["name"] == "ada-helper" and then["config"]["llm_config"]["model"]
    assert {t["name"] for t in then["tools"]} >= {"memory_insert", "memory_replace"}
    assert then["message_ids"] == now["message_ids"][: len(then["message_ids"])]
    assert len(now["message_ids"]) > len(then["message_ids"])

    [human_diff] = [b for b in diff["blocks"] if b["label"] == "human"]
    # a line each: the value has no final newline, and the removed and added lines were joined
    assert "\n-Likes: tea\n+Likes: coffee\n" in human_diff["diff"]
    # as GET /v1/agents/{id} shows it: Letta's default for a temperature never set, not null
    assert then["config"]["llm_config"]["temperature"] == 0.7
    shown = stack.client().agents.retrieve(agent.id).llm_config.temperature
    assert shown == then["config"]["llm_config"]["temperature"]
    # the create version lists the tools it was made with
    assert "archival_memory_insert" in {t["name"] for t in at_creation["tools"]} and timeline[-1][
        "changes"
    ]["tools_attached"] == [t["id"] for t in at_creation["tools"]]
    assert diff["messages_added"] == now["message_ids"][len(then["message_ids"]) :]
    assert diff["messages_evicted"] == []
    assert "+Likes: coffee" in diff["system_prompt"]


def test_a_rewind_returns_the_agent_and_can_be_undone(stack: Stack, db: Database) -> None:
    agent, timeline = agent_with_a_past(stack)
    client = stack.client()
    first_turn_end = [v for v in timeline if v["kind"] == "step"][2]["version"]
    before_rewind = timeline[0]["version"]
    with api(stack) as http:
        then = http.get(f"/agents/{agent.id}/history/{first_turn_end}").json()
        done = http.post(f"/agents/{agent.id}/rewind", json={"version": first_turn_end}).json()
    assert done["rewound_to"] == first_turn_end and done["version"] == before_rewind + 1
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == (
        "Name: Ada\nLikes: tea"
    )
    # The context window is the one of then; the second turn's messages stay in recall, marked.
    with db.connection() as conn:
        window = [
            r["message_id"]
            for r in conn.execute(
                "SELECT message_id FROM context_entries WHERE agent_id = %s ORDER BY position",
                (agent.id,),
            ).fetchall()
        ]
        rewound = {
            r["id"]
            for r in conn.execute(
                "SELECT id FROM messages WHERE agent_id = %s AND rewound_at IS NOT NULL",
                (agent.id,),
            ).fetchall()
        }
    assert window == then["message_ids"]
    assert rewound == set(done["messages_rewound"]) and len(rewound) >= 4
    listed = client.agents.messages.list(agent.id, limit=100).items
    assert rewound <= {m.id for m in listed}  # still listed: nothing deleted
    with api(stack) as http:  # and a client can tell which were rewound
        raw = http.get(f"/agents/{agent.id}/messages", params={"limit": 100}).json()
    assert {m["id"] for m in raw if m.get("rewound_at")} == rewound
    # The archived passage was written after: kept and named (the request did not say delete).
    assert len(done["passages_after"]) == 1 and done["passages_deleted"] == []
    assert len(client.agents.passages.list(agent.id)) == 1

    # The agent goes on from there: its next step reads the rewound memory.
    stack.fake.reply("You like tea.")
    client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "what?"}])
    prompt = stack.fake.requests[-1].body["messages"][0]["content"]
    assert "Likes: tea" in str(prompt) and "Likes: coffee" not in str(prompt)

    # A rewind is a version too: rewinding to the one before it undoes it.
    with api(stack) as http:
        undo = http.post(f"/agents/{agent.id}/rewind", json={"version": before_rewind}).json()
        kinds = [v["kind"] for v in http.get(f"/agents/{agent.id}/history").json()]
    assert kinds[:4] == ["rewind", "step", "rewind", "step"]
    assert undo["rewound_to"] == before_rewind
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == (
        "Name: Ada\nLikes: coffee"
    )
    with db.connection() as conn:
        back = conn.execute(
            "SELECT count(*) AS n FROM messages WHERE id = ANY(%s) AND rewound_at IS NULL",
            (list(rewound),),
        ).fetchone()
    assert back is not None and back["n"] == len(rewound)  # in the window again: unmarked


def test_a_rewind_may_take_the_archival_passages_written_since(stack: Stack) -> None:
    agent, timeline = agent_with_a_past(stack)
    first_turn_end = [v for v in timeline if v["kind"] == "step"][2]["version"]
    with api(stack) as http:
        done = http.post(
            f"/agents/{agent.id}/rewind", json={"version": first_turn_end, "archival": "delete"}
        ).json()
    assert done["passages_deleted"] == done["passages_after"] and len(done["passages_after"]) == 1
    assert stack.client().agents.passages.list(agent.id) == []


def test_a_fork_starts_a_new_agent_from_a_past_version(stack: Stack) -> None:
    agent, timeline = agent_with_a_past(stack)
    client = stack.client()
    shared = client.blocks.create(label="team", value="Team: blue")
    other = client.agents.create(name="bob", llm_config=LLM)  # type: ignore[arg-type]
    client.agents.blocks.attach(shared.id, agent_id=agent.id)
    client.agents.blocks.attach(shared.id, agent_id=other.id)
    latest = http_latest(stack, agent.id)
    first_turn_end = [v for v in timeline if v["kind"] == "step"][2]["version"]
    with api(stack) as http:
        early = http.post(
            f"/agents/{agent.id}/fork", json={"version": first_turn_end, "name": "ada-tea"}
        ).json()
        late = http.post(f"/agents/{agent.id}/fork", json={"version": latest}).json()
        then = http.get(f"/agents/{agent.id}/history/{first_turn_end}").json()
    assert early["name"] == "ada-tea" and late["name"] == "ada-helper (fork)"
    blocks = {b.label: b for b in client.agents.blocks.list(early["id"])}
    assert blocks["human"].value == "Name: Ada\nLikes: tea"
    assert blocks["human"].id != client.agents.blocks.retrieve("human", agent_id=agent.id).id
    assert "team" not in blocks  # attached after that version
    late_blocks = {b.label: b.id for b in client.agents.blocks.list(late["id"])}
    assert late_blocks["team"] == shared.id  # shared with bob: stays shared
    assert late_blocks["human"] != blocks["human"].id  # its own: a copy each time
    # The window of then, as copies; archival memory of then (the coffee passage came later).
    copied = client.agents.messages.list(early["id"], order="asc", limit=100).items
    originals = client.agents.messages.list(agent.id, order="asc", limit=100).items
    assert [getattr(m, "content", None) for m in copied if m.message_type == "user_message"] == [
        getattr(m, "content", None)
        for m in originals
        if m.message_type == "user_message" and m.id in then["message_ids"]
    ]
    assert not {m.id for m in copied} & {m.id for m in originals}
    assert client.agents.passages.list(early["id"]) == []
    assert len(client.agents.passages.list(late["id"])) == 1
    # The fork has its own history and goes its own way.
    with api(stack) as http:
        forked = http.get(f"/agents/{early['id']}/history").json()
    assert forked[0]["kind"] == "fork"
    assert forked[0]["detail"]["forked_from"] == {"agent_id": agent.id, "version": first_turn_end}
    stack.fake.reply("", call("memory_insert", label="human", new_str="Likes: cocoa"))
    stack.fake.reply("ok")
    client.agents.messages.create(early["id"], messages=[{"role": "user", "content": "cocoa"}])
    assert "cocoa" not in client.agents.blocks.retrieve("human", agent_id=agent.id).value


def http_latest(stack: Stack, agent_id: str) -> int:
    with api(stack) as http:
        found: int = http.get(f"/agents/{agent_id}/history", params={"limit": 1}).json()[0][
            "version"
        ]
    return found


def test_a_rewind_waits_for_no_run_and_bad_requests_change_nothing(
    stack: Stack, db: Database
) -> None:
    agent, timeline = agent_with_a_past(stack)
    latest = timeline[0]["version"]
    with api(stack) as http:
        for body, status in (
            ({"version": latest + 5}, 404),  # a version the agent has not reached
            ({"version": 2**63}, 422),
            ({"version": 2**70}, 422),
            ({"version": 0}, 422),
            ({"version": "two"}, 422),
            ({"version": "5"}, 422),  # a version is a number: not version 5
            ({"version": True}, 422),  # nor version 1
            ({"version": 2.0}, 422),
            ({}, 422),
            ({"version": 2, "archival": "burn"}, 422),
            ({"version": 2, "extra": 1}, 422),
        ):
            reply = http.post(f"/agents/{agent.id}/rewind", json=body)
            assert reply.status_code == status, (body, reply.text)
        # A version with no checkpoint of the agent's (one of another agent's numbers).
        assert http.get(f"/agents/{agent.id}/history/999999").status_code == 404
        assert http.get(f"/agents/{agent.id}/history/0").status_code == 422
        assert http.get(f"/agents/{agent.id}/history/x").status_code == 422
        assert http.post(f"/agents/{agent.id}/fork", json={"version": 999999}).status_code == 404
        for bad in ("5", True, 2**70):
            forked = http.post(f"/agents/{agent.id}/fork", json={"version": bad})
            assert forked.status_code == 422, (bad, forked.text)
        assert (
            http.post(f"/agents/{agent.id}/fork", json={"version": 1, "name": ""}).status_code
            == 422
        )
    # A run in progress holds its agent: the rewind is refused.
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO runs (id, organization_id, agent_id, status)"
            " VALUES ('run-00000000-0000-4000-8000-000000000001', %s, %s, 'running')",
            (stack.org_id, agent.id),
        )
    with api(stack) as http:
        refused = http.post(f"/agents/{agent.id}/rewind", json={"version": 2})
        assert refused.status_code == 409 and "run in progress" in refused.text
        assert http.get(f"/agents/{agent.id}/history").json()[0]["version"] == latest


def test_another_organization_sees_none_of_it(stack: Stack, db: Database) -> None:
    from cairn.domain import Organization, User
    from cairn.store import tenancy

    agent, timeline = agent_with_a_past(stack)
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="other"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="eve"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="t")
    version = timeline[0]["version"]
    with api(stack, key) as http:
        for reply in (
            http.get(f"/agents/{agent.id}/history"),
            http.get(f"/agents/{agent.id}/history/{version}"),
            http.get(f"/agents/{agent.id}/history/{version}/diff", params={"against": 1}),
            http.post(f"/agents/{agent.id}/rewind", json={"version": 2}),
            http.post(f"/agents/{agent.id}/fork", json={"version": 2}),
        ):
            assert reply.status_code == 404, reply.text
    with api(stack) as http:
        assert http.get(f"/agents/{agent.id}/history").json()[0]["version"] == version


@pytest.mark.parametrize("limit", [1, 3])
def test_a_page_of_the_timeline_is_bounded(stack: Stack, limit: int) -> None:
    agent, _ = agent_with_a_past(stack)
    with api(stack) as http:
        page = http.get(f"/agents/{agent.id}/history", params={"limit": limit}).json()
        assert len(page) == limit
        assert http.get(f"/agents/{agent.id}/history", params={"limit": 101}).status_code == 422


def test_the_sweeper_folds_history_older_than_its_retention(stack: Stack, db: Database) -> None:
    from cairn.store import history

    agent, timeline = agent_with_a_past(stack)
    versions = [v["version"] for v in timeline]
    base = [v for v in timeline if v["kind"] == "step"][2]["version"]  # the first turn's end
    with api(stack) as http:
        before = {v: http.get(f"/agents/{agent.id}/history/{v}").json() for v in versions}
    # A step's row keeps no tool list (migration 0043): its state shows the agent's tools, as
    # the version before it has them.
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT version, kind, tool_ids FROM agent_versions WHERE agent_id = %s", (agent.id,)
        ).fetchall()
    assert all(r["tool_ids"] is None for r in rows if r["kind"] == "step")
    assert all(r["tool_ids"] is not None for r in rows if r["kind"] != "step")
    names = {t["name"] for t in before[versions[0]]["tools"]}
    assert "archival_memory_insert" in names
    assert all(before[r["version"]]["tools"] for r in rows if r["kind"] == "step")
    with db.transaction() as conn:  # everything up to the base is 100 days old
        conn.execute(
            "UPDATE agent_versions SET created_at = now() - interval '100 days'"
            " WHERE agent_id = %s AND version <= %s",
            (agent.id, base),
        )
    assert history.prune(db, retention_days=90) == 1
    assert history.prune(db, retention_days=90) == 0  # nothing left to fold
    with api(stack) as http:
        kept = [v["version"] for v in http.get(f"/agents/{agent.id}/history").json()]
        assert kept == [v for v in versions if v >= base]
        for v in kept:  # the base and every later version read as they did
            now = http.get(f"/agents/{agent.id}/history/{v}").json()
            assert now["blocks"] == before[v]["blocks"]
            assert now["message_ids"] == before[v]["message_ids"]
            assert now["system_prompt"] == before[v]["system_prompt"]
            assert now["config"] == before[v]["config"]
            assert now["tools"] == before[v]["tools"]  # the base's own list, folded in
        assert http.get(f"/agents/{agent.id}/history/{versions[-1]}").status_code == 404


def test_an_agent_file_is_exported_as_of_a_version(stack: Stack) -> None:
    agent, timeline = agent_with_a_past(stack)
    first_turn_end = [v for v in timeline if v["kind"] == "step"][2]["version"]
    client = stack.client()
    agents_before = {a.id for a in client.agents.list()}
    with api(stack) as http:
        then = http.get(f"/agents/{agent.id}/history/{first_turn_end}").json()
        exported = http.get(f"/agents/{agent.id}/history/{first_turn_end}/export")
        assert exported.status_code == 200
        assert http.get(f"/agents/{agent.id}/history/999999/export").status_code == 404
    data = exported.json()
    [entry] = data["agents"]
    assert entry["name"] == "ada-helper"
    values = {b["label"]: b["value"] for b in data["blocks"]}
    assert values["human"] == "Name: Ada\nLikes: tea"
    assert len(entry["in_context_message_ids"]) == len(then["message_ids"])
    assert {a.id for a in client.agents.list()} == agents_before  # nothing kept
    # It imports as any agent file does, into the agent of then.
    imported = client.agents.import_file(file=("ada.af", exported.content, "application/json"))
    [new_id] = imported.agent_ids
    assert client.agents.blocks.retrieve("human", agent_id=new_id).value == (
        "Name: Ada\nLikes: tea"
    )
