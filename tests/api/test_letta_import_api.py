"""An agent imported from a Letta database answers through the API, with its memory."""

from __future__ import annotations

import httpx
from letta_client import Letta

from cairn.assembly.operator import import_letta
from cairn.domain import User
from cairn.store import tenancy
from tests.api.conftest import Stack
from tests.integration.test_letta_import import IDS, ORG, letta_url


def imported_client(stack: Stack, letta_url: str) -> Letta:
    """The Letta database imported, and a client of a user made in its organization."""
    import_letta(stack.runtime.db, letta_url)
    with stack.runtime.db.transaction() as conn:
        user = tenancy.create_user(conn, User(organization_id=ORG, name="migrated"))
        _, key = tenancy.create_api_key(conn, ORG, user.id, name="after import")
    return Letta(base_url=stack.url, api_key=key, max_retries=0, timeout=30)


def test_an_imported_agent_goes_on_talking_through_the_api(stack: Stack, letta_url: str) -> None:
    client = imported_client(stack, letta_url)
    agent = client.agents.retrieve(IDS["A"], include=["agent.blocks"])
    assert {b.label for b in agent.memory.blocks} >= {"human", "persona", "preferences"}

    # The fixture's server talked to a mock model on another port: point the agent at ours,
    # as an operator would when the model's address changes.
    config = agent.llm_config.model_dump(exclude_none=True)
    config["model_endpoint"] = f"{stack.fake.base_url}/v1"
    embedding = agent.embedding_config.model_dump(exclude_none=True)  # type: ignore[union-attr]
    embedding["embedding_endpoint"] = f"{stack.fake.base_url}/v1"
    client.agents.update(agent.id, llm_config=config, embedding_config=embedding)  # type: ignore[arg-type]

    stack.fake.reply("Welcome back, Dana.")
    reply = client.agents.messages.create(agent.id, input="Do you remember me?")
    assert [m.content for m in reply.messages if m.message_type == "assistant_message"] == [
        "Welcome back, Dana."
    ]
    sent = stack.fake.requests[-1].body["messages"]
    system = sent[0]["content"]
    system_text = system if isinstance(system, str) else str(system)
    assert "Name: Dana. Likes hiking in the Alps." in system_text  # the imported memory
    assert len(sent) >= 28  # Letta's 27-message window, then the new message
    found = client.messages.search(query="hiking")  # recall memory came over, searchable
    assert found
    assert client.agents.passages.search(agent.id, query="hiking").results  # and the archive


def test_an_imported_agent_on_its_organizations_own_provider_calls_with_that_key(
    stack: Stack, pg_dsn: str
) -> None:
    """Agent A as Letta keeps an agent on a BYOK provider (`provider_category` byok), its
    provider's key encrypted with LETTA_ENCRYPTION_KEY: after the import it talks through
    the API, and the model is called with the provider's own key, not the server's."""
    import json

    import psycopg

    from tests.integration.test_letta_import_providers import LETTA_KEY, add_providers

    restored = letta_url.__wrapped__(pg_dsn)  # type: ignore[attr-defined]
    copy = next(restored)
    add_providers(copy)
    byok = {
        "provider_name": "team-openai",
        "provider_category": "byok",
        "handle": "team-openai/gpt-4o-mini",
        "model_endpoint": f"{stack.fake.base_url}/v1",
    }
    with psycopg.connect(copy, autocommit=True) as conn:
        conn.execute(
            "UPDATE agents SET llm_config = (llm_config::jsonb || %s::jsonb)::json WHERE id = %s",
            (json.dumps(byok), IDS["A"]),
        )
        # The call goes to the provider's own URL (the config must agree with it).
        conn.execute(
            "UPDATE providers SET base_url = %s WHERE name = 'team-openai'",
            (byok["model_endpoint"],),
        )
    import_letta(
        stack.runtime.db,
        copy,
        vault=stack.runtime.vault,
        letta_key=LETTA_KEY,
        settings=stack.runtime.settings,
    )
    next(restored, None)
    with stack.runtime.db.transaction() as conn:
        user = tenancy.create_user(conn, User(organization_id=ORG, name="migrated"))
        _, key = tenancy.create_api_key(conn, ORG, user.id, name="after import")
    client = Letta(base_url=stack.url, api_key=key, max_retries=0, timeout=30)
    listed = httpx.get(f"{stack.url}/v1/providers/", headers={"Authorization": f"Bearer {key}"})
    assert {p["name"] for p in listed.json()} == {
        "team-openai",
        "team-claude",
        "old-groq",
        "team-bedrock",
    }

    stack.fake.reply("On your own key.")
    reply = client.agents.messages.create(IDS["A"], input="Which key?")
    assert [m.content for m in reply.messages if m.message_type == "assistant_message"] == [
        "On your own key."
    ]
    sent = {k.lower(): v for k, v in stack.fake.requests[-1].headers.items()}
    assert sent["authorization"] == "Bearer sk-team-openai-1234"  # not the server's sk-test
