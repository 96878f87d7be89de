"""Where the database credentials come from: DATABASE_URL, or a Secrets Manager secret."""

from __future__ import annotations

from collections.abc import Callable

from psycopg.conninfo import make_conninfo

from cairn.config import Settings
from cairn.errors import CairnError


class ConfigurationError(CairnError):
    pass


# How long a function trusts the database secret it read. The RDS Proxy checks each new
# connection's password against the secret's current value, so after a rotation a warm
# function must read it again: within this long, while its open connections carry on.
SECRET_MAX_AGE_SECONDS = 60


def database_dsn(settings: Settings) -> str:
    """The connection string as of now (migrations, one-off commands)."""
    found = database_conninfo(settings)
    return found if isinstance(found, str) else found()


def database_conninfo(settings: Settings) -> str | Callable[[], str]:
    """DATABASE_URL, or on AWS what builds the connection string from the secret each time
    the pool opens a connection (Powertools caches the secret between reads)."""
    if settings.database_url:
        return settings.database_url
    if settings.db_iam_user:
        return _with_iam_token(settings, settings.db_iam_user)
    arn = settings.db_secret_arn
    if not arn:
        raise ConfigurationError(
            "No database configured: set DATABASE_URL, or CAIRN_DB_SECRET_ARN on AWS"
        )

    def from_secret() -> str:
        from aws_lambda_powertools.utilities import parameters

        secret = parameters.get_secret(arn, transform="json", max_age=SECRET_MAX_AGE_SECONDS)
        return _conninfo(
            settings,
            settings.db_host or secret["host"],
            secret.get("port", 5432),
            secret.get("dbname") or settings.db_name,
            secret["username"],
            secret["password"],
        )

    return from_secret


def _with_iam_token(settings: Settings, user: str) -> Callable[[], str]:
    """IAM database authentication (RDS Proxy's, or the cluster's): a token per connection,
    signed here with the function's own credentials (no call to AWS, valid 15 minutes,
    `rds-db:connect` on the user), so the function reads no database secret at all."""
    host = settings.db_host
    if not host:
        raise ConfigurationError(
            "CAIRN_DB_IAM_USER needs CAIRN_DB_HOST (the proxy's or the cluster's endpoint)"
        )
    import boto3

    rds = boto3.client("rds")

    def with_token() -> str:
        token = rds.generate_db_auth_token(DBHostname=host, Port=5432, DBUsername=user)
        return _conninfo(settings, host, 5432, settings.db_name, user, token)

    return with_token


def app_password(settings: Settings) -> str | None:
    """The application role's password (the migrate function sets it), if the stack has one."""
    if not settings.db_app_secret_arn:
        return None
    from aws_lambda_powertools.utilities import parameters

    secret = parameters.get_secret(settings.db_app_secret_arn, transform="json", max_age=60)
    return str(secret["password"])


def _conninfo(
    settings: Settings, host: str, port: int, dbname: str, user: str, password: str
) -> str:
    """A connection string with TLS as the settings ask. RDS Proxy presents an ACM
    certificate for its endpoint's name, chaining to Amazon Root CA ("Using TLS/SSL with RDS
    Proxy", Amazon RDS User Guide): verified against certifi's bundle, which holds it,
    unless the settings name another file (the RDS CA bundle, for the cluster itself)."""
    extra = {}
    if settings.db_sslmode.startswith("verify"):
        import certifi

        extra["sslrootcert"] = settings.db_sslrootcert or certifi.where()
    if settings.db_idle_session_seconds:
        extra["options"] = f"-c idle_session_timeout={int(settings.db_idle_session_seconds * 1000)}"
    return make_conninfo(
        host=host,
        port=str(port),
        dbname=dbname,
        user=user,
        password=password,
        sslmode=settings.db_sslmode,
        connect_timeout="10",
        **extra,
    )


# The provider-keys secret (JSON) may hold these; the environment wins where both are set.
PROVIDER_KEYS = {
    "OPENAI_API_KEY": "openai_api_key",
    "OPENAI_BASE_URL": "openai_base_url",
    "ANTHROPIC_API_KEY": "anthropic_api_key",
    "ANTHROPIC_BASE_URL": "anthropic_base_url",
    "GEMINI_API_KEY": "gemini_api_key",
    "GEMINI_BASE_URL": "gemini_base_url",
    "EXA_API_KEY": "exa_api_key",  # web_search's, for agents without one of their own
}


def with_provider_keys(settings: Settings) -> Settings:
    """Settings with the model providers' keys from Secrets Manager, on AWS."""
    if not settings.provider_secret_arn:
        return settings
    from aws_lambda_powertools.utilities import parameters

    stored = parameters.get_secret(settings.provider_secret_arn, transform="json", max_age=300)
    if not isinstance(stored, dict):
        raise ConfigurationError("CAIRN_PROVIDER_SECRET_ARN: the secret must be a JSON object")
    found = {
        field: str(stored[name])
        for name, field in PROVIDER_KEYS.items()
        if stored.get(name) and not getattr(settings, field)
    }
    return settings.model_copy(update=found)


def egress_key(settings: Settings) -> Callable[[], bytes] | None:
    """Where the egress proxy's pass key comes from on AWS (None: tools get no network)."""
    arn = settings.tool_egress_secret_arn
    if not arn:
        return None

    def read() -> bytes:
        from aws_lambda_powertools.utilities import parameters

        return str(parameters.get_secret(arn, max_age=300)).encode()

    return read


def sealing_key(settings: Settings) -> Callable[[], bytes]:
    """What agents' secrets are sealed with: on AWS the SHA-256 of the stack's sealing-key
    secret (read once a process, on first use), else the local envelope key."""
    arn = settings.sealing_key_secret_arn
    if not arn:
        from cairn.sealing import envelope_key

        return lambda: envelope_key(settings)

    def read() -> bytes:
        import hashlib

        from aws_lambda_powertools.utilities import parameters

        return hashlib.sha256(str(parameters.get_secret(arn, max_age=3600)).encode()).digest()

    return read
