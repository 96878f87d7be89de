"""Settings that decide how Cairn connects."""

from __future__ import annotations

from cairn.config import Settings


def test_prepared_statements_are_on_except_behind_rds_proxy() -> None:
    assert Settings().prepare_statements is True  # a direct connection (DATABASE_URL)
    behind_proxy = Settings.from_env({"CAIRN_DB_HOST": "proxy.example", "CAIRN_DB_SECRET_ARN": "x"})
    assert behind_proxy.prepare_statements is False
    forced = Settings.from_env(
        {"CAIRN_DB_HOST": "proxy.example", "CAIRN_DB_PREPARED_STATEMENTS": "true"}
    )
    assert forced.prepare_statements is True
