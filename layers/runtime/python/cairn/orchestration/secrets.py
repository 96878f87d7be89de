"""Where the database credentials come from: DATABASE_URL, or a Secrets Manager secret."""

from __future__ import annotations

from psycopg.conninfo import make_conninfo

from cairn.config import Settings
from cairn.errors import CairnError


class ConfigurationError(CairnError):
    pass


def database_dsn(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    if settings.db_secret_arn:
        # Powertools caches the secret across warm invocations (max_age), so a warm Lambda
        # does not call Secrets Manager per request.
        from aws_lambda_powertools.utilities import parameters

        secret = parameters.get_secret(settings.db_secret_arn, transform="json", max_age=300)
        return make_conninfo(
            host=settings.db_host or secret["host"],
            port=str(secret.get("port", 5432)),
            dbname=secret.get("dbname") or settings.db_name,
            user=secret["username"],
            password=secret["password"],
            sslmode="require",
            connect_timeout="10",
        )
    raise ConfigurationError(
        "No database configured: set DATABASE_URL, or CAIRN_DB_SECRET_ARN on AWS"
    )
