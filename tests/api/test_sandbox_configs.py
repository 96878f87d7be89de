"""Letta's sandbox configs and their environment variables (/v1/sandbox-config, which
letta-client 1.5.0 has no methods for: driven over HTTP as Letta's routes take them). The
`local` config's variables are every tool call's environment, beneath the agent's secrets."""

from __future__ import annotations

import ast
from typing import Any

import httpx
import pytest

from cairn.domain import Organization, User
from cairn.store import tenancy
from cairn.store.db import Database
from tests.api.conftest import Stack
from tests.api.test_custom_tools import SNOOPS, tool_return
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def http(stack: Stack, key: str | None = None) -> httpx.Client:
    auth = {"Authorization": f"Bearer {key or stack.key}"}
    return httpx.Client(base_url=f"{stack.url}/v1", headers=auth, timeout=30)


def ok(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_one_config_of_each_kind_made_replaced_listed_and_deleted(stack: Stack) -> None:
    with http(stack) as client:
        local = ok(client.post("/sandbox-config/", json={"config": {"sandbox_dir": "/srv/t"}}))
        assert local["type"] == "local" and local["id"].startswith("sandbox-")
        assert local["config"] == {
            "sandbox_dir": "/srv/t",
            "use_venv": False,
            "venv_name": "venv",
            "pip_requirements": [],
        }
        again = ok(client.post("/sandbox-config/local", json={"use_venv": True}))
        assert again["id"] == local["id"] and again["config"]["use_venv"] is True
        assert again["config"].get("sandbox_dir") is None  # replaced, as Letta replaces it
        e2b = ok(client.post("/sandbox-config/e2b/default"))
        assert e2b["type"] == "e2b" and e2b["config"] == {"timeout": 300}
        assert ok(client.post("/sandbox-config/e2b/default"))["id"] == e2b["id"]
        modal = ok(client.post("/sandbox-config/", json={"config": {"language": "python"}}))
        assert modal["type"] == "modal" and modal["config"]["timeout"] == 60
        assert {c["type"] for c in ok(client.get("/sandbox-config/"))} == {"local", "e2b", "modal"}
        assert [
            c["id"] for c in ok(client.get("/sandbox-config/", params={"sandbox_type": "e2b"}))
        ] == [e2b["id"]]
        first = ok(client.get("/sandbox-config/", params={"limit": 1}))
        rest = ok(client.get("/sandbox-config/", params={"after": first[0]["id"]}))
        assert len(first) == 1 and len(rest) == 2 and first[0]["id"] not in {c["id"] for c in rest}
        changed = ok(client.patch(f"/sandbox-config/{e2b['id']}", json={"config": {"timeout": 90}}))
        assert changed["config"] == {"timeout": 90}
        wrong = client.patch(f"/sandbox-config/{e2b['id']}", json={"config": {"venv_name": "x"}})
        assert wrong.status_code == 422 and "venv_name" in wrong.text
        assert client.delete(f"/sandbox-config/{modal['id']}").status_code == 204
        assert client.delete(f"/sandbox-config/{modal['id']}").status_code == 404
        assert client.post("/sandbox-config/local/recreate-venv").json()["id"] == local["id"]
        bad = client.get("/sandbox-config/", params={"sandbox_type": "docker"})
        assert bad.status_code == 422


def test_variables_are_sealed_kept_per_name_and_renamed_in_place(
    stack: Stack, db: Database
) -> None:
    with http(stack) as client:
        config = ok(client.post("/sandbox-config/local/default"))["id"]
        variables = f"/sandbox-config/{config}/environment-variable"
        made = ok(
            client.post(variables, json={"key": "API_KEY", "value": "v-1", "description": "d"})
        )
        assert made["id"].startswith("sandbox-env-") and made["value"] == "v-1"
        same = ok(
            client.post(
                f"/sandbox-config/{config}/environment-variable",
                json={"key": "API_KEY", "value": "v-2"},
            )
        )
        assert same["id"] == made["id"] and same["value"] == "v-2" and same["description"] == "d"
        other = ok(
            client.post(
                f"/sandbox-config/{config}/environment-variable",
                json={"key": "OTHER", "value": "o"},
            )
        )
        listed = ok(client.get(f"/sandbox-config/{config}/environment-variable"))
        assert {v["key"]: v["value"] for v in listed} == {"API_KEY": "v-2", "OTHER": "o"}
        renamed = ok(
            client.patch(
                f"/sandbox-config/environment-variable/{made['id']}", json={"key": "NEW_KEY"}
            )
        )
        assert renamed["key"] == "NEW_KEY" and renamed["value"] == "v-2"
        clash = client.patch(
            f"/sandbox-config/environment-variable/{other['id']}", json={"key": "NEW_KEY"}
        )
        assert clash.status_code == 400 and "already" in clash.text
        bad = client.post(
            f"/sandbox-config/{config}/environment-variable", json={"key": "9LIVES", "value": "x"}
        )
        assert bad.status_code == 422
        missing = "sandbox-00000000-0000-4000-8000-000000000000"
        assert client.get(f"/sandbox-config/{missing}/environment-variable").status_code == 404
        assert (
            client.delete(f"/sandbox-config/environment-variable/{other['id']}").status_code == 204
        )
        assert client.patch("/sandbox-config/environment-variable/nope", json={}).status_code == 404
    with db.connection() as conn:
        rows = conn.execute("SELECT value_sealed FROM sandbox_env_vars").fetchall()
    assert rows and all(b"v-2" not in bytes(r["value_sealed"]) for r in rows)


def test_the_local_configs_variables_are_every_tool_calls_environment_beneath_the_agents(
    stack: Stack,
) -> None:
    with http(stack) as client:
        local = ok(client.post("/sandbox-config/local/default"))["id"]
        e2b = ok(client.post("/sandbox-config/e2b/default"))["id"]
        for config, key, value in (
            (local, "SHARED", "from-org"),
            (local, "ORG_ONLY", "o"),
            (e2b, "E2B_ONLY", "never-here"),
        ):
            ok(
                client.post(
                    f"/sandbox-config/{config}/environment-variable",
                    json={"key": key, "value": value},
                )
            )
    sdk = stack.client()
    snoop = sdk.tools.create(source_code=SNOOPS)
    agent = sdk.agents.create(llm_config=LLM, tool_ids=[snoop.id], secrets={"SHARED": "agent"})  # type: ignore[arg-type]
    stack.fake.reply("", call("snoop"))
    stack.fake.reply("ok")
    ret = tool_return(sdk.agents.messages.create(agent.id, input="go"))
    seen = ast.literal_eval(ret.tool_return)  # type: ignore[attr-defined]
    assert seen["SHARED"] == "agent" and seen["ORG_ONLY"] == "o"
    assert "E2B_ONLY" not in seen


def test_another_organization_sees_and_changes_none_of_them(stack: Stack, db: Database) -> None:
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="other"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="eve"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="t")
    with http(stack) as mine, http(stack, key) as theirs:
        config = ok(mine.post("/sandbox-config/local/default"))["id"]
        var = ok(
            mine.post(
                f"/sandbox-config/{config}/environment-variable", json={"key": "MINE", "value": "m"}
            )
        )
        assert ok(theirs.get("/sandbox-config/")) == []
        assert theirs.get(f"/sandbox-config/{config}/environment-variable").status_code == 404
        assert (
            theirs.patch(
                f"/sandbox-config/environment-variable/{var['id']}", json={"value": "x"}
            ).status_code
            == 404
        )
        assert theirs.delete(f"/sandbox-config/{config}").status_code == 404
        own = ok(theirs.post("/sandbox-config/local/default"))
        assert own["id"] != config  # one local config each
        listed = ok(mine.get(f"/sandbox-config/{config}/environment-variable"))
        assert [v["value"] for v in listed] == ["m"]


@pytest.mark.parametrize("body", [{"config": {"sandbox_dir": 3}}, {"config": "local"}])
def test_a_config_that_is_not_one_is_a_4xx(stack: Stack, body: dict[str, Any]) -> None:
    with http(stack) as client:
        answer = client.post("/sandbox-config/", json=body)
    assert 400 <= answer.status_code < 500
