"""`cairn-admin`: an operator manages organizations and keys, locally and on a stack."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from cairn.adapters.aws.admin import CommandFailed, run_remote
from cairn.adapters.local.lambdas import invoke
from cairn.local import admin
from cairn.store import tenancy
from cairn.store.db import Database


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert admin.main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def opens(db: Database, key: str) -> str | None:
    with db.connection() as conn:
        found = tenancy.authenticate(conn, key)
    return found.organization_id if found else None


def test_an_operator_creates_lists_rotates_and_revokes_keys(
    db: Database, pg_dsn: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", pg_dsn)
    made = cli(capsys, "create-tenant", "acme-ops", "--user", "ada")
    org, first = made["organization_id"], made["api_key"]
    assert opens(db, first) == org
    listed = {o["id"]: o for o in cli(capsys, "tenants")["organizations"]}
    assert listed[org]["name"] == "acme-ops" and listed[org]["active_keys"] == 1
    second = cli(capsys, "create-key", org, "--name", "ci")
    keys = cli(capsys, "keys", org)["keys"]
    assert [k["name"] for k in keys] == ["first key", "ci"]
    assert all("hash" not in json.dumps(k) for k in keys)
    assert [k["key_prefix"] for k in keys] == [made["api_key"][:13], second["api_key"][:13]]
    rotated = cli(capsys, "rotate-key", org, second["key_id"])
    assert opens(db, second["api_key"]) is None and opens(db, rotated["api_key"]) == org
    assert cli(capsys, "revoke-key", org, made["key_id"])["revoked"] is True
    assert opens(db, first) is None
    assert cli(capsys, "tool-hosts", org, "api.github.com")["tool_hosts"] == ["api.github.com"]
    # Mistakes answer one line naming what is wrong, and exit 1.
    assert admin.main(["revoke-key", org, "apikey-missing"]) == 1
    assert "not found" in capsys.readouterr().err
    assert admin.main(["tool-hosts", org, "http://x/"]) == 1
    assert "not a host pattern" in capsys.readouterr().err


def test_on_a_stack_the_same_command_goes_to_its_migrate_function(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", pg_dsn)
    sent: list[dict[str, Any]] = []

    class Lambda:  # boto3's client, answering with our real migrate handler
        def invoke(self, FunctionName: str, Payload: str) -> dict[str, Any]:
            sent.append(json.loads(Payload))
            try:
                body, error = invoke("migrate", sent[-1]), None
            except Exception as err:
                body, error = {"errorMessage": str(err)}, "Unhandled"
            answer = {"Payload": io.BytesIO(json.dumps(body).encode())}
            return {**answer, "FunctionError": error} if error else answer

    command = admin.payload(admin.parse(["create-tenant", "remote-co"]))
    made = run_remote("Cairn-migrate", command, client=Lambda())
    assert made["api_key"].startswith("sk-cairn-") and sent == [command]
    with pytest.raises(CommandFailed, match="unknown action"):
        run_remote("Cairn-migrate", {"action": "drop_everything"}, client=Lambda())
