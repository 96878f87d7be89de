"""Settings that decide how Cairn connects."""

from __future__ import annotations

import os
import re
from pathlib import Path

from cairn.config import Settings


def test_prepared_statements_are_on_except_behind_rds_proxy() -> None:
    assert Settings().prepare_statements is True  # a direct connection (DATABASE_URL)
    behind_proxy = Settings.from_env({"CAIRN_DB_HOST": "proxy.example", "CAIRN_DB_SECRET_ARN": "x"})
    assert behind_proxy.prepare_statements is False
    forced = Settings.from_env(
        {"CAIRN_DB_HOST": "proxy.example", "CAIRN_DB_PREPARED_STATEMENTS": "true"}
    )
    assert forced.prepare_statements is True


def test_every_setting_is_in_the_readmes_configuration_table() -> None:
    """Docs that match the code: each environment variable Settings reads is documented."""
    import inspect

    from cairn.config import Settings

    names = set(re.findall(r'": "([A-Z][A-Z0-9_]+)"', inspect.getsource(Settings.from_env)))
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme[readme.index("## Configuration") : readme.index("## Layout")]
    assert len(names) > 20 and {n for n in names if f"`{n}`" not in table} == set()


def test_tests_reach_no_provider_key_and_no_other_machine() -> None:
    """The suite's guards (tests/conftest.py): the environment's provider keys are gone,
    and a connection anywhere but this machine fails naming the address."""
    import socket

    import pytest

    from tests.conftest import PROVIDER_KEYS, OutsideConnection

    assert not [name for name in PROVIDER_KEYS if name in os.environ]
    with socket.socket() as sock, pytest.raises(OutsideConnection, match=r"93\.184\.215\.14:443"):
        sock.connect(("93.184.215.14", 443))
