"""The Lambda handlers on their sample events, against the real test database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import psycopg
import pytest
from moto import mock_aws

from cairn.adapters.aws.secrets import ConfigurationError, database_dsn, with_provider_keys
from cairn.adapters.local.lambdas import invoke
from cairn.assembly.build import after_restore, build_runtime, use_runtime
from cairn.config import Settings
from cairn.store import tenancy
from cairn.store.db import Database
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
    # TLS verified, host name included, against a bundle holding RDS Proxy's root CA.
    assert params["sslmode"] == "verify-full"
    assert "Amazon Root CA 1" in Path(str(params["sslrootcert"])).read_text()


def test_migrations_wait_for_a_database_that_is_not_reachable_yet(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first deploy: the proxy refuses connections until it has a target. The migrate
    function retries while its invocation has time instead of failing the deploy."""
    import socket
    import threading
    import time

    from cairn.tools.egress import relay

    real = psycopg.conninfo.conninfo_to_dict(pg_dsn)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def open_later() -> None:  # the database comes up 1.5 s into the deploy
        time.sleep(1.5)
        listener = socket.create_server(("127.0.0.1", port))
        while True:
            client, _ = listener.accept()
            host = real.get("host") or "localhost"
            upstream = socket.socket(socket.AF_UNIX) if host.startswith("/") else socket.socket()
            upstream.connect(
                f"{host}/.s.PGSQL.{real.get('port', 5432)}"
                if host.startswith("/")
                else (host, int(real.get("port", 5432)))
            )
            threading.Thread(
                target=relay,
                args=(client, upstream),
                kwargs={"until": time.time() + 60},
                daemon=True,
            ).start()

    threading.Thread(target=open_later, daemon=True).start()
    late = psycopg.conninfo.make_conninfo(pg_dsn, host="127.0.0.1", port=str(port))
    monkeypatch.setenv("DATABASE_URL", late)
    started = time.monotonic()
    result = invoke("migrate", event("migrate/update.json"))
    assert result["PhysicalResourceId"] == "cairn-schema-migrations"
    assert time.monotonic() - started >= 1.5  # it waited (its first retry after 5 s)


def test_a_rotated_database_password_reaches_a_warm_function(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The RDS Proxy checks each new connection against the secret's current value: a warm
    function's pool reads the secret again for new connections, not once for its life."""
    from aws_lambda_powertools.utilities import parameters

    from cairn.adapters.aws import secrets

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setattr(secrets, "SECRET_MAX_AGE_SECONDS", 0)  # the minute, elapsed
    real = psycopg.conninfo.conninfo_to_dict(pg_dsn)
    stored = {
        "host": real.get("host", "localhost"),
        "port": int(real.get("port", 5432)),
        "username": real["user"],
        "dbname": real["dbname"],
    }
    with mock_aws():
        client = boto3.client("secretsmanager")
        old = json.dumps({**stored, "password": "old"})
        arn = client.create_secret(Name="cairn/db-rotating", SecretString=old)["ARN"]
        parameters.clear_caches()
        db = Database(secrets.database_conninfo(Settings(db_secret_arn=arn, db_sslmode="prefer")))
        with pytest.raises(psycopg.OperationalError), psycopg.connect(db.dsn()):  # type: ignore[operator]
            pass
        rotated = json.dumps({**stored, "password": real["password"]})
        client.put_secret_value(SecretId=arn, SecretString=rotated)
        try:
            with db.connection() as conn:  # a new connection, after the rotation
                assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
        finally:
            db.close()
            parameters.clear_caches()


def test_database_dsn_without_configuration_names_the_variables() -> None:
    with pytest.raises(ConfigurationError, match=r"DATABASE_URL.*CAIRN_DB_SECRET_ARN"):
        database_dsn(Settings())


def test_provider_keys_come_from_their_secret_and_the_environment_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = boto3.client("secretsmanager")
        keys = client.create_secret(
            Name="cairn/providers",
            SecretString=json.dumps({"OPENAI_API_KEY": "sk-from-secret", "ANTHROPIC_API_KEY": ""}),
        )
        filled = with_provider_keys(
            Settings(provider_secret_arn=keys["ARN"], anthropic_api_key="ant-from-env")
        )
        assert filled.openai_api_key == "sk-from-secret"
        assert filled.anthropic_api_key == "ant-from-env"  # set in the environment: kept
        listed = client.create_secret(Name="cairn/bad", SecretString="[1, 2]")
        with pytest.raises(ConfigurationError, match="CAIRN_PROVIDER_SECRET_ARN"):
            with_provider_keys(Settings(provider_secret_arn=listed["ARN"]))


def test_after_a_snapstart_restore_the_runtime_reconnects(database: Database) -> None:
    db = Database(database.dsn)
    rt = build_runtime(Settings(), db=db)
    use_runtime(rt)
    try:
        with db.connection() as conn:
            before = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
        after_restore()
        with db.connection() as conn:
            after = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
        assert before is not None and after is not None and before["pid"] != after["pid"]
    finally:
        rt.queue.steps.close()  # type: ignore[attr-defined]
        use_runtime(None)
        db.close()


@pytest.mark.parametrize(
    ("init", "loaded"), [("on-demand", False), ("snap-start", True)], ids=["cold", "snapstart"]
)
def test_the_api_handler_preloads_sdks_turn_and_models_only_for_a_snapshot(
    init: str, loaded: bool
) -> None:
    code = (
        "import sys; from cairn.adapters.local.lambdas import load_handler; load_handler('api'); "
        "from pydantic import BaseModel; from cairn.domain.messages import Message; "
        "from cairn.services.requests import CreateAgent; "
        "print(Message.__pydantic_complete__, CreateAgent.__pydantic_complete__, "
        "'cairn.run.steps.step_work' in sys.modules); "
        "print(sorted({'openai', 'anthropic'} & set(sys.modules)))"
    )
    env = {**os.environ, "AWS_LAMBDA_INITIALIZATION_TYPE": init}
    *_, built, out = (
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()
    )
    assert out == ("['anthropic', 'openai']" if loaded else "[]")
    # A snapshot also holds the turn's modules and every model's validator built; a cold
    # start builds each model on first use.
    assert built == ("True True True" if loaded else "False False False")


# Loaded by the requests that use them, not by every cold start (docs/numbers.md, packaging).
ONLY_SOME_REQUESTS = (
    "docstring_parser",  # a tool made from source, a step's first tool schemas
    "cairn.tools.egress",  # a custom tool call that may use the network
    "cairn.store.migrate",  # the migrate function and the local stack
    "cairn.agent_files.exporting",  # agent file export
    "cairn.agent_files.importing",  # and import
    "cairn.run.steps.step_work",  # a step
    # The route modules, and the Letta schemas and request models behind them: a request
    # loads those of its path (cairn/api/lazy_routes.py).
    "cairn.api.routes.agents",
    "cairn.api.routes.messages",
    "cairn.api.letta",
    "cairn.services.requests",
)


@pytest.mark.parametrize("function", ["api", "step"])
def test_a_cold_start_leaves_out_what_only_some_requests_use(function: str) -> None:
    code = (
        "import sys; from cairn.adapters.local.lambdas import load_handler; "
        f"load_handler({function!r}); "
        f"print([m for m in {ONLY_SOME_REQUESTS!r} if m in sys.modules])"
    )
    env = {**os.environ, "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("function", ["api", "stream"])
def test_a_cold_start_settles_what_it_imported(function: str) -> None:
    # Frozen out of the collector's reach once imported, so a collection while the first
    # request imports its route modules walks only what is new (cairn/assembly/app.py).
    code = (
        "import gc; from cairn.adapters.local.lambdas import load_handler; "
        f"load_handler({function!r}); print(gc.get_freeze_count())"
    )
    env = {**os.environ, "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert int(done.stdout.strip().splitlines()[-1]) > 10_000


# Loaded by no function's cold start: the provider SDKs (a model's first call), MCP (a
# server's first use), PDF and HTML parsing (a document's), the local model, the exporters
# of traces (when tracing is on), the operator's commands (an admin command only), and the
# HTTP client they and Telegram's Bot API share (48-70 ms: registering the Telegram channel
# in every function had put it on every cold start).
NO_COLD_START = (
    "httpx",
    "openai",
    "anthropic",
    "google.genai",
    "mcp",
    "pypdf",
    "torch",
    "sentence_transformers",
    "opentelemetry.exporter",
    "opentelemetry.sdk",
    "cairn.assembly.operator",
    "cairn.letta_import",
)
# But an edge's record, which assembly registers in every function: the Letta import's names
# its action, whose modules load when it runs.
RECORDS = ("cairn.letta_import", "cairn.letta_import.edge")


@pytest.mark.parametrize(
    "function", ["api", "step", "stream", "approval", "sleeptime", "sweeper", "migrate", "sandbox"]
)
def test_no_cold_start_loads_what_only_a_first_use_needs(function: str) -> None:
    code = (
        "import sys; from cairn.adapters.local.lambdas import load_handler; "
        f"load_handler({function!r}); "
        f"print(sorted({{m for m in sys.modules for p in {NO_COLD_START!r}"
        f" if (m == p or m.startswith(p + '.')) and m not in {RECORDS!r}}}))"
    )
    env = {**os.environ, "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_migrate_creates_a_first_tenant_whose_key_opens_the_api(
    db: Database, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", pg_dsn)
    made = invoke("migrate", event("migrate/create-tenant.json"))
    assert made["api_key"] and made["organization_id"].startswith("org-")
    with db.connection() as conn:
        key = tenancy.authenticate(conn, made["api_key"])
    assert key is not None and key.organization_id == made["organization_id"]
