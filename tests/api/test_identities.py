"""Identities (Letta's): the people an application's agents and blocks belong to, found by the
application's own key. Driven with the unchanged letta-client 1.5.0, every list through its
auto-pager."""

from __future__ import annotations

import httpx
import pytest
from letta_client import ConflictError, Letta, NotFoundError

from cairn.domain import Organization, User
from cairn.services.pages import Page
from cairn.store import tenancy
from tests.api.conftest import Stack

LLM = {"model": "gpt-fake-mini", "model_endpoint_type": "openai", "context_window": 32000}


def agent(client: Letta, name: str, **extra: object) -> str:
    return client.agents.create(name=name, llm_config=LLM, **extra).id  # type: ignore[arg-type]


def test_an_identitys_life_through_the_sdk(stack: Stack) -> None:
    client = stack.client()
    ada_agent, bob_agent = agent(client, "ada-agent"), agent(client, "bob-agent")
    made = client.identities.create(
        identifier_key="user-ada",
        name="Ada",
        identity_type="user",
        agent_ids=[ada_agent],
        properties=[
            {"key": "plan", "value": "pro", "type": "string"},
            {"key": "seats", "value": 3, "type": "number"},
        ],
    )
    assert made.id.startswith("identity-") and made.agent_ids == [ada_agent]
    assert {p.key: p.value for p in made.properties} == {"plan": "pro", "seats": 3}
    with pytest.raises(ConflictError):  # one identity per key
        client.identities.create(identifier_key="user-ada", name="Ada", identity_type="user")

    # PATCH adds links and merges properties by key (Letta's rule).
    changed = client.identities.update(
        made.id,
        name="Ada L.",
        agent_ids=[bob_agent],
        properties=[{"key": "plan", "value": "team", "type": "string"}],
    )
    assert changed.name == "Ada L." and sorted(changed.agent_ids) == sorted([ada_agent, bob_agent])
    assert {p.key: p.value for p in changed.properties} == {"plan": "team", "seats": 3}
    # PUT .../properties replaces them all.
    client.identities.properties.upsert(
        made.id, body=[{"key": "vip", "value": True, "type": "boolean"}]
    )
    assert [(p.key, p.value) for p in client.identities.retrieve(made.id).properties] == [
        ("vip", True)
    ]
    # PUT /identities/ by key: the existing one, its properties and agents replaced.
    again = client.identities.upsert(
        identifier_key="user-ada",
        name="Ada",
        identity_type="user",
        agent_ids=[bob_agent],
        properties=[],
    )
    assert again.id == made.id and again.agent_ids == [bob_agent] and again.properties == []
    fresh = client.identities.upsert(identifier_key="org-acme", name="Acme", identity_type="org")
    assert fresh.id != made.id

    # The agents and blocks of an identity; agents by identity.
    assert [a.id for a in client.identities.agents.list(made.id)] == [bob_agent]
    client.agents.identities.attach(made.id, agent_id=ada_agent)
    assert {a.id for a in client.identities.agents.list(made.id, limit=1)} == {ada_agent, bob_agent}
    shown = client.agents.retrieve(ada_agent, include=["agent.identities"])
    assert shown.identity_ids == [made.id] and shown.identities[0].identifier_key == "user-ada"
    listed = client.agents.list(identifier_keys=["user-ada"], limit=1)
    assert {a.id for a in listed} == {ada_agent, bob_agent}
    assert [a.id for a in client.agents.list(identity_id=fresh.id)] == []
    client.agents.identities.detach(made.id, agent_id=ada_agent)
    assert [a.id for a in client.identities.agents.list(made.id)] == [bob_agent]
    block = client.blocks.create(label="account", value="Ada's account")
    # letta-client 1.5 has no blocks.identities: as Letta's older clients send it.
    attached = httpx.patch(
        f"{stack.url}/v1/blocks/{block.id}/identities/attach/{made.id}",
        headers={"Authorization": f"Bearer {stack.key}"},
    )
    assert attached.status_code == 200 and attached.json()["id"] == block.id
    assert [b.id for b in client.identities.blocks.list(made.id)] == [block.id]
    client.blocks.create(label="other", value="not hers")
    assert [b.id for b in client.blocks.list(identity_id=made.id)] == [block.id]
    assert [b.id for b in client.blocks.list(identifier_keys=["user-ada"])] == [block.id]
    assert list(client.blocks.list(identifier_keys=["nobody"])) == []

    # An agent made with its identities; its identities replaced by an update.
    carol = agent(client, "carol-agent", identity_ids=[fresh.id])
    assert client.identities.retrieve(fresh.id).agent_ids == [carol]
    client.agents.update(carol, identity_ids=[made.id])
    assert client.identities.retrieve(fresh.id).agent_ids == []
    assert carol in client.identities.retrieve(made.id).agent_ids

    # Every identity through the auto-pager, two at a time.
    for n in range(3):
        client.identities.create(identifier_key=f"user-{n}", name=f"U{n}", identity_type="user")
    keys = [i.identifier_key for i in client.identities.list(limit=2)]
    assert sorted(keys) == sorted(["user-ada", "org-acme", "user-0", "user-1", "user-2"])
    assert [i.identifier_key for i in client.identities.list(identity_type="org")] == ["org-acme"]
    assert [i.name for i in client.identities.list(name="ada")] == ["Ada"]

    client.agents.delete(bob_agent)  # its links go with it
    assert bob_agent not in client.identities.retrieve(made.id).agent_ids
    client.identities.delete(made.id)
    with pytest.raises(NotFoundError):
        client.identities.retrieve(made.id)
    assert client.blocks.retrieve(block.id).value == "Ada's account"  # the block stays


def test_identities_are_the_organizations_own_and_bad_links_write_nothing(stack: Stack) -> None:
    client = stack.client()
    mine = agent(client, "mine")
    with stack.runtime.db.transaction() as conn:
        other = tenancy.create_organization(conn, Organization(name="other"))
        user = tenancy.create_user(conn, User(organization_id=other.id, name="bo"))
        _, key = tenancy.create_api_key(conn, other.id, user.id, name="t")
    theirs = Letta(base_url=stack.url, api_key=key, max_retries=0, timeout=30)
    their_identity = theirs.identities.create(identifier_key="k", name="T", identity_type="user")
    with pytest.raises(NotFoundError):
        client.identities.retrieve(their_identity.id)
    with pytest.raises(NotFoundError):  # our agent on their identity
        client.agents.identities.attach(their_identity.id, agent_id=mine)
    with pytest.raises(NotFoundError):  # their identity, our agent: one missing link, nothing made
        theirs.identities.create(
            identifier_key="k2", name="T2", identity_type="user", agent_ids=[mine]
        )
    assert [i.identifier_key for i in theirs.identities.list()] == ["k"]
    assert list(client.identities.list()) == []
    headers = {"Authorization": f"Bearer {stack.key}"}
    for body, says in (
        ({"identifier_key": "x", "name": "X", "identity_type": "robot"}, "identity_type"),
        ({"identifier_key": "", "name": "X", "identity_type": "user"}, "identifier_key"),
        ({"identifier_key": "x", "name": "X", "identity_type": "user", "extra": 1}, "extra"),
        (
            {
                "identifier_key": "x",
                "name": "X",
                "identity_type": "user",
                "properties": [{"key": "k", "value": 1, "type": "colour"}],
            },
            "type",
        ),
    ):
        answer = httpx.post(f"{stack.url}/v1/identities/", json=body, headers=headers)
        assert answer.status_code == 422 and says in answer.text, answer.text
    bad_id = httpx.get(f"{stack.url}/v1/identities/identity-nope", headers=headers)
    assert bad_id.status_code == 422
    assert httpx.get(f"{stack.url}/v1/identities/count", headers=headers).json() == 0


def test_a_page_of_agents_reads_its_relations_in_the_same_statements_however_long(
    stack: Stack,
) -> None:
    """Blocks, tools and identities of a listed page are read page-wise: listing eight agents
    costs the statements listing two does."""
    import threading

    from cairn.domain.agents import AgentFilter
    from cairn.services import agents as agent_service
    from tests.fakes.round_trips import RoundTrips

    client = stack.client()
    person = client.identities.create(identifier_key="p", name="P", identity_type="user")

    def statements(n: int) -> int:
        tag = f"page-of-{n}"
        for i in range(n):
            agent(
                client,
                f"{tag}-{i}",
                tags=[tag],
                identity_ids=[person.id],
                memory_blocks=[{"label": "human", "value": "P"}],
            )
        counter = RoundTrips(threading.current_thread()).install()
        try:
            views = agent_service.list_agents(
                stack.runtime,
                stack.org_id,
                AgentFilter(tags=[tag]),
                page=Page(limit=50, after=None, before=None, order="asc"),
                relations=True,
            )
        finally:
            counter.uninstall()
        assert len(views) == n and all(v.blocks and v.tools and v.identities for v in views)
        return counter.statements

    assert statements(8) == statements(2)
