"""Providers (Letta's BYOK): an organization's own keys, kept sealed, never sent back, and
used for its agents' models named `<provider name>/<model>`. letta-client 1.5 has no
providers resource, so these go over HTTP as Letta's older clients and its UI send them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from cairn.domain import Organization, User
from cairn.store import tenancy
from tests.api.conftest import Stack

KEY = "sk-org-own-key-7731"


def api(stack: Stack, key: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key or stack.key}"}
    return httpx.Client(base_url=f"{stack.url}/v1", headers=headers, timeout=30)


def sent_key(stack: Stack) -> str:
    headers = {k.lower(): v for k, v in stack.fake.requests[-1].headers.items()}
    return headers["authorization"]


def create(http: httpx.Client, stack: Stack, **extra: Any) -> dict[str, Any]:
    body = {
        "name": "team-openai",
        "provider_type": "openai",
        "api_key": KEY,
        "base_url": f"{stack.fake.base_url}/v1",
        **extra,
    }
    answer = http.post("/providers/", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_create_list_retrieve_modify_delete_and_the_key_never_comes_back(stack: Stack) -> None:
    with api(stack) as http:
        made = create(http, stack)
        assert made["provider_category"] == "byok" and made["provider_type"] == "openai"
        assert made["id"].startswith("provider-") and made["api_key"] == "...7731"
        assert KEY not in str(made)
        listed = http.get("/providers/").json()
        assert [p["id"] for p in listed] == [made["id"]] and KEY not in str(listed)
        assert http.get("/providers/", params={"provider_type": "anthropic"}).json() == []
        assert http.get(f"/providers/{made['id']}").json()["name"] == "team-openai"
        changed = http.patch(f"/providers/{made['id']}", json={"api_key": "sk-rotated-key-0042"})
        assert changed.status_code == 200 and changed.json()["api_key"] == "...0042"
        gone = http.delete(f"/providers/{made['id']}")
        assert gone.json() == {"message": f"Provider id={made['id']} successfully deleted"}
        assert http.get(f"/providers/{made['id']}").status_code == 404


def test_the_key_is_sealed_in_the_database(stack: Stack) -> None:
    with api(stack) as http:
        made = create(http, stack)
    with stack.runtime.db.connection() as conn:
        row = conn.execute(
            "SELECT key_ref, key_sealed, key_hint FROM providers WHERE id = %s", (made["id"],)
        ).fetchone()
    assert row["key_ref"] is None and row["key_hint"] == "7731"
    assert KEY.encode() not in bytes(row["key_sealed"]) and len(row["key_sealed"]) > len(KEY)


def test_an_agent_on_the_organizations_provider_calls_with_its_key(stack: Stack) -> None:
    with api(stack) as http:
        create(http, stack)
        handles = {m["handle"]: m for m in http.get("/models/").json()}
        own = handles["team-openai/gpt-fake-mini"]
        assert own["provider_category"] == "byok" and own["provider_name"] == "team-openai"
        assert "openai/gpt-fake-mini" in handles  # the server's own stay listed
    client = stack.client()
    agent = client.agents.create(model="team-openai/gpt-fake-mini")
    assert agent.llm_config.provider_name == "team-openai"
    stack.fake.reply("Hello on your own key.")
    sent = client.agents.messages.create(agent.id, input="hi")
    assert sent.messages[-1].content == "Hello on your own key."
    assert sent_key(stack) == f"Bearer {KEY}"
    with api(stack) as http:  # a rotated key is used from the next call on
        provider = http.get("/providers/").json()[0]
        http.patch(f"/providers/{provider['id']}", json={"api_key": "sk-rotated-key-0042"})
    stack.fake.reply("Still here.")
    client.agents.messages.create(agent.id, input="again")
    assert sent_key(stack) == "Bearer sk-rotated-key-0042"


def test_model_lists_are_asked_of_every_provider_at_once_and_kept(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GET /v1/models/ asks the server's providers (OpenAI, Anthropic here) and the
    organization's own at the same time: the fake answers none of the three lists until all
    three were asked. A second listing is served from what they answered (5 minutes), and a
    key check still asks."""
    import threading

    from cairn.llm import catalog

    monkeypatch.setattr(catalog, "_lists", {})  # nothing kept from other tests' servers
    with api(stack) as http:
        create(http, stack)
        stack.fake.listings.clear()
        stack.fake.list_barrier = threading.Barrier(3, timeout=5)
        handles = [m["handle"] for m in http.get("/models/").json()]
        assert {
            "openai/gpt-fake-mini",
            "anthropic/gpt-fake-mini",
            "team-openai/gpt-fake-mini",
        } <= set(handles)
        assert len(stack.fake.listings) == 3 and KEY in " ".join(stack.fake.listings)
        stack.fake.list_barrier = None
        assert [m["handle"] for m in http.get("/models/").json()] == handles
        assert len(stack.fake.listings) == 3  # kept: nobody asked again
        provider = http.get("/providers/").json()[0]
        assert http.post(f"/providers/{provider['id']}/check").status_code == 200
        assert len(stack.fake.listings) == 4  # a check asks the provider itself


def test_a_deleted_provider_fails_its_agents_runs_with_a_clear_reason(stack: Stack) -> None:
    with api(stack) as http:
        made = create(http, stack)
        client = stack.client()
        agent = client.agents.create(model="team-openai/gpt-fake-mini")
        http.delete(f"/providers/{made['id']}")
        answer = http.post(f"/agents/{agent.id}/messages", json={"input": "hi"})
    assert answer.status_code == 401
    assert "team-openai" in answer.json()["error"]["message"]


def test_another_organization_sees_nothing_of_it(stack: Stack) -> None:
    with api(stack) as http:
        made = create(http, stack)
    with stack.runtime.db.transaction() as conn:
        other = tenancy.create_organization(conn, Organization(name="other"))
        user = tenancy.create_user(conn, User(organization_id=other.id, name="bo"))
        _, key = tenancy.create_api_key(conn, other.id, user.id, name="t")
    with api(stack, key) as http:
        assert http.get(f"/providers/{made['id']}").status_code == 404
        assert http.get("/providers/").json() == []
        assert "team-openai/gpt-fake-mini" not in [m["handle"] for m in http.get("/models/").json()]
        refused = http.post("/agents/", json={"model": "team-openai/gpt-fake-mini"})
        assert refused.status_code == 400
        assert "Provider team-openai is not supported" in refused.text


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"name": "openai", "provider_type": "openai", "api_key": "k"}, 400, "server's own"),
        ({"name": "a/b", "provider_type": "openai", "api_key": "k"}, 422, "name"),
        ({"name": "x", "provider_type": "nonsense", "api_key": "k"}, 422, "provider_type"),
        ({"name": "x", "provider_type": "openai"}, 422, "api_key"),
        ({"name": "x", "provider_type": "openai", "api_key": "k", "extra": 1}, 422, "extra"),
    ],
)
def test_bad_providers_are_refused_naming_the_fault(
    stack: Stack, body: dict[str, Any], status: int, says: str
) -> None:
    with api(stack) as http:
        answer = http.post("/providers/", json=body)
        assert answer.status_code == status and says in answer.text
        assert http.get("/providers/").json() == []


def test_a_second_provider_of_one_name_is_a_conflict(stack: Stack) -> None:
    with api(stack) as http:
        create(http, stack)
        again = http.post(
            "/providers/",
            json={"name": "team-openai", "provider_type": "openai", "api_key": "sk-other"},
        )
        assert again.status_code == 409 and "team-openai" in again.text
        assert len(http.get("/providers/").json()) == 1


def test_check_a_key_before_and_after_storing_it(stack: Stack) -> None:
    base = f"{stack.fake.base_url}/v1"
    with api(stack) as http:
        good = http.post(
            "/providers/check", json={"provider_type": "openai", "api_key": KEY, "base_url": base}
        )
        assert good.status_code == 200
        assert good.json() == {"message": "Valid api key for provider_type=openai"}
        rejected = {"provider_type": "openai", "api_key": "sk-rejected", "base_url": base}
        bad = http.post("/providers/check", json=rejected)
        assert bad.status_code == 401
        made = create(http, stack, api_key="sk-rejected-0001")
        assert http.post(f"/providers/{made['id']}/check").status_code == 401


def test_a_bedrock_provider_lists_checks_and_signs_with_the_organizations_own_key(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Letta's Bedrock BYOK: an access key id (`access_key`), its secret (`api_key`) and a
    region. Its models are its inference profiles (ListInferenceProfiles), named by the
    ARN's last dotted part as Letta names them; its agents' Converse calls are signed with
    that key, in that region, not with the function's role (here: other credentials)."""
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "AKIASERVERROLE"),
        ("AWS_SECRET_ACCESS_KEY", "x"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        monkeypatch.setenv(name, value)
    own = {
        "name": "team-bedrock",
        "provider_type": "bedrock",
        "api_key": "team-secret-9f3e",
        "access_key": "AKIATEAMBEDROCK",
        "region": "us-west-2",
        "base_url": stack.fake.base_url,
    }
    arn = "arn:aws:bedrock:us-west-2:123456789012:inference-profile/" + (
        "us.anthropic.claude-sonnet-4-20250514-v1:0"
    )
    with api(stack) as http:
        missing = http.post("/providers/", json={**own, "region": None})
        assert missing.status_code == 400 and "region" in missing.text
        odd = http.post("/providers/check", json={**own, "region": "us east"})
        assert odd.status_code == 400 and "not an AWS region" in odd.text
        unreachable = http.post("/providers/check", json={**own, "base_url": "http://a[b"})
        assert unreachable.status_code == 400 and "Invalid IPv6 URL" in unreachable.text
        checked = http.post("/providers/check", json={**own, "access_key": "AKIAREJECTED"})
        assert checked.status_code == 401
        made = http.post("/providers/", json=own).json()
        assert http.post(f"/providers/{made['id']}/check").status_code == 200
        listed = {m["handle"]: m for m in http.get("/models/").json()}
        mine = listed["team-bedrock/claude-sonnet-4-20250514-v1:0"]
        assert mine["model"] == arn and mine["provider_category"] == "byok"
        unknown = http.post("/agents/", json={"model": "team-bedrock/claude-none-v1:0"})
        assert unknown.status_code == 400 and "inference profiles" in unknown.text
    signed = [s for s in stack.fake.listings if "AWS4-HMAC-SHA256" in s]
    assert signed and all(
        "Credential=AKIATEAMBEDROCK/" in s and "/us-west-2/bedrock/" in s
        for s in signed
        if "REJECTED" not in s
    )

    client = stack.client()
    agent = client.agents.create(model="team-bedrock/claude-sonnet-4-20250514-v1:0")
    assert agent.llm_config.model == arn and agent.llm_config.provider_name == "team-bedrock"
    stack.fake.reply("From your own Bedrock.")
    sent = client.agents.messages.create(agent.id, input="hi")
    assert sent.messages[-1].content == "From your own Bedrock."
    call = stack.fake.requests[-1]
    assert call.provider == "bedrock" and call.path.endswith("/converse")
    authorization = sent_key(stack)
    assert "Credential=AKIATEAMBEDROCK/" in authorization and "/us-west-2/bedrock/" in authorization
    with api(stack) as http:  # a rotated secret keeps its key id, as in Letta
        rotated = http.patch(f"/providers/{made['id']}", json={"api_key": "team-secret-0a1b"})
        assert rotated.status_code == 200 and rotated.json()["api_key"] == "...0a1b"
    stack.fake.reply("Still yours.")
    client.agents.messages.create(agent.id, input="again")
    assert "Credential=AKIATEAMBEDROCK/" in sent_key(stack)
