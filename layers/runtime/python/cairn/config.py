"""Settings read from the environment (the same names locally and on Lambda)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field


class Settings(BaseModel):
    # Any PostgreSQL >= 15 with pgvector; unset locally means "start the embedded server".
    database_url: str | None = None
    # On AWS: the Secrets Manager secret holding the database credentials (RDS format).
    db_secret_arn: str | None = None
    db_host: str | None = None  # RDS Proxy endpoint; overrides the secret's host
    db_name: str = "cairn"
    db_pool_size: int = Field(default=1, ge=1)
    # The local stack
    port: int = Field(default=8283, ge=1, le=65535)
    api_key: str | None = None
    data_dir: Path = Path(".cairn")

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        names = {
            "database_url": "DATABASE_URL",
            "db_secret_arn": "CAIRN_DB_SECRET_ARN",
            "db_host": "CAIRN_DB_HOST",
            "db_name": "CAIRN_DB_NAME",
            "db_pool_size": "CAIRN_DB_POOL_SIZE",
            "port": "CAIRN_PORT",
            "api_key": "CAIRN_API_KEY",
            "data_dir": "CAIRN_DATA_DIR",
        }
        return cls.model_validate({k: env[v] for k, v in names.items() if env.get(v)})
