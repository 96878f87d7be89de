"""The role the functions use on AWS: they read and write rows, they never change schema."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import psycopg
import pytest
from moto import mock_aws

from cairn.adapters.aws.secrets import database_conninfo
from cairn.adapters.local.lambdas import invoke
from cairn.config import Settings
from cairn.domain import Organization
from cairn.store.db import Database
from cairn.store.migrate import APP_ROLE, allow_login
from tests.fakes.llm_server import FakeLLM, call
from tests.integration.engine_harness import engine_for, make_agent, send, state_of


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def as_app(pg_dsn: str, password: str) -> str:
    return psycopg.conninfo.make_conninfo(pg_dsn, user=APP_ROLE, password=password)


@pytest.mark.parametrize("prepare", [True, False], ids=["prepared", "behind-the-proxy"])
def test_a_whole_turn_runs_as_the_application_role(
    db: Database, org: Organization, fake: FakeLLM, pg_dsn: str, prepare: bool
) -> None:
    """Behind RDS Proxy nothing is prepared, and the turn calls the statements' functions
    (migrations 0048-0051): the role may run them too."""
    allow_login(pg_dsn, "app-password")
    app = Database(as_app(pg_dsn, "app-password"), max_size=2, prepare=prepare)
    try:
        agent = make_agent(db, org)
        fake.reply("", call("core_memory_append", label="human", content="Likes: tea"))
        fake.reply("Noted.")
        turn = send(engine_for(app, fake), agent, "I like tea")
        assert turn.run.status == "completed" and turn.run.stop_reason == "end_turn"
        assert state_of(db, agent)[1]["human"] == "Name: Ada\nLikes: tea"
        with app.connection() as conn:
            for statement in (
                "DROP TABLE agents",
                "ALTER TABLE agents ADD COLUMN x int",
                "CREATE TABLE stray (x int)",
                "SELECT * FROM schema_migrations",
                "TRUNCATE messages",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                    conn.execute(statement)
    finally:
        app.close()


def test_the_migrate_function_gives_the_role_its_secrets_password(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aws_lambda_powertools.utilities import parameters

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("DATABASE_URL", pg_dsn)
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(
            Name="cairn/app",
            SecretString=json.dumps({"username": APP_ROLE, "password": "from-secret"}),
        )["ARN"]
        monkeypatch.setenv("CAIRN_DB_APP_SECRET_ARN", arn)
        parameters.clear_caches()
        invoke("migrate", {"RequestType": "Update", "PhysicalResourceId": "x"})
    with psycopg.connect(as_app(pg_dsn, "from-secret")) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (APP_ROLE,)


def test_on_aws_functions_connect_with_an_iam_token_not_a_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "s"),
        ("AWS_DEFAULT_REGION", "eu-west-1"),
    ):
        monkeypatch.setenv(name, value)
    settings = Settings(db_host="cairn.proxy-abc.eu-west-1.rds.amazonaws.com", db_iam_user=APP_ROLE)
    made = database_conninfo(settings)
    assert callable(made)
    params = psycopg.conninfo.conninfo_to_dict(made())
    assert params["user"] == APP_ROLE and params["sslmode"] == "verify-full"
    token = str(params["password"])
    assert token.startswith(f"{settings.db_host}:5432/?Action=connect&DBUser={APP_ROLE}")
    assert "X-Amz-Signature=" in token


def test_without_a_proxy_the_migrate_function_lets_the_role_log_in_with_iam_tokens(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`size=small`: no proxy holds the role's password; Aurora lets the members of rds_iam
    log in with IAM tokens (a plain PostgreSQL has no such role: made here as Aurora has)."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("ALTER ROLE cairn_app NOLOGIN")
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'rds_iam'").fetchone():
            conn.execute("CREATE ROLE rds_iam NOLOGIN")
        conn.execute("REVOKE rds_iam FROM cairn_app")
    monkeypatch.setenv("DATABASE_URL", pg_dsn)
    monkeypatch.setenv("CAIRN_DB_APP_IAM", "true")
    invoke("migrate", {"RequestType": "Update", "PhysicalResourceId": "x"})
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute(
            "SELECT rolcanlogin, pg_has_role(%s, 'rds_iam', 'member') FROM pg_roles"
            " WHERE rolname = %s",
            (APP_ROLE, APP_ROLE),
        ).fetchone()
    assert row == (True, True)


def test_to_the_cluster_itself_tls_is_checked_against_the_rds_bundle_and_idle_sessions_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "s"),
        ("AWS_DEFAULT_REGION", "eu-west-1"),
    ):
        monkeypatch.setenv(name, value)
    settings = Settings.from_env(
        {
            "CAIRN_DB_HOST": "cairn.cluster-abc.eu-west-1.rds.amazonaws.com",
            "CAIRN_DB_IAM_USER": APP_ROLE,
            "CAIRN_DB_SSLROOTCERT": "/opt/rds-ca/global-bundle.pem",
            "CAIRN_DB_IDLE_SESSION_SECONDS": "60",
            "CAIRN_DB_PREPARED_STATEMENTS": "true",
        }
    )
    made = database_conninfo(settings)
    assert callable(made)
    params = psycopg.conninfo.conninfo_to_dict(made())
    assert params["sslmode"] == "verify-full"
    assert params["sslrootcert"] == "/opt/rds-ca/global-bundle.pem"
    assert params["options"] == "-c idle_session_timeout=60000"
    assert str(params["password"]).startswith(f"{settings.db_host}:5432/?Action=connect")
    assert settings.prepare_statements  # no proxy to pin sessions to
