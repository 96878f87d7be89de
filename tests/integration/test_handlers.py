"""The Lambda handlers on their sample events, against the real test database."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import psycopg
import pytest
from moto import mock_aws

from cairn.config import Settings
from cairn.local.lambdas import invoke
from cairn.orchestration.secrets import ConfigurationError, database_dsn
from cairn.store.migrate import available_migrations

EVENTS = Path(__file__).resolve().parents[2] / "events"


def event(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def test_health_answers_like_letta() -> None:
    response = invoke("api", event("api/health.json"))
    assert response["statusCode"] == 200
    assert json.loads(response["body"]) == {"version": "0.1.0", "status": "ok"}


def test_every_route_but_health_needs_a_key() -> None:
    unknown = event("api/health.json")
    unknown["rawPath"] = unknown["requestContext"]["http"]["path"] = "/v1/agents/"
    response = invoke("api", unknown)
    assert response["statusCode"] == 401
    assert json.loads(response["body"]) == {"detail": "Unauthorized"}


def test_migrate_create_applies_the_schema(
    empty_schema_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", empty_schema_dsn)
    created = invoke("migrate", event("migrate/create.json"))
    updated = invoke("migrate", event("migrate/update.json"))

    assert created["PhysicalResourceId"] == "cairn-schema-migrations"
    every = ",".join(m.version for m in available_migrations())
    assert created["Data"]["Applied"] == every and every.startswith("0001_initial,")
    assert updated["Data"] == {"Applied": "none", "Count": 0}
    with psycopg.connect(empty_schema_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM agents").fetchone() == (0,)


def test_migrate_delete_leaves_the_database_alone(
    empty_schema_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", empty_schema_dsn)
    result = invoke("migrate", event("migrate/delete.json"))
    assert result == {"PhysicalResourceId": "cairn-schema-migrations"}
    with psycopg.connect(empty_schema_dsn) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchone()
    assert tables == (0,)


def test_database_dsn_from_a_secrets_manager_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        secret = boto3.client("secretsmanager").create_secret(
            Name="cairn/db",
            SecretString=json.dumps(
                {
                    "host": "db.cluster.local",
                    "port": 5432,
                    "username": "cairn",
                    "password": "s3cret",
                    "dbname": "cairn",
                }
            ),
        )
        dsn = database_dsn(Settings(db_secret_arn=secret["ARN"], db_host="proxy.endpoint.local"))
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    assert params["host"] == "proxy.endpoint.local"  # RDS Proxy in front of the cluster
    assert (params["user"], params["password"], params["dbname"]) == ("cairn", "s3cret", "cairn")
    assert params["sslmode"] == "require"


def test_database_dsn_without_configuration_names_the_variables() -> None:
    with pytest.raises(ConfigurationError, match=r"DATABASE_URL.*CAIRN_DB_SECRET_ARN"):
        database_dsn(Settings())
