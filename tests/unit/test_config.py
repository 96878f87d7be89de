"""Settings that decide how Cairn connects."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from cairn.config import Settings


def test_prepared_statements_are_on_except_behind_rds_proxy() -> None:
    assert Settings().prepare_statements is True  # a direct connection (DATABASE_URL)
    behind_proxy = Settings.from_env({"CAIRN_DB_HOST": "proxy.example", "CAIRN_DB_SECRET_ARN": "x"})
    assert behind_proxy.prepare_statements is False
    forced = Settings.from_env(
        {"CAIRN_DB_HOST": "proxy.example", "CAIRN_DB_PREPARED_STATEMENTS": "true"}
    )
    assert forced.prepare_statements is True


def test_the_configuration_page_names_what_the_code_reads_and_nothing_else() -> None:
    """Docs that match the code (docs/configuration.md): each environment variable Settings
    maps and each `CAIRN_*` name the library or a handler uses is documented, and each
    documented variable is a name the code uses."""
    from cairn.assembly.edges import SETTINGS

    root = Path(__file__).resolve().parents[2]
    mapped = set(SETTINGS.variables().values())  # the core's groups and the edges'
    assert {"CAIRN_TELEGRAM_API_URL", "CAIRN_MCP_TIMEOUT_SECONDS", "DATABASE_URL"} <= mapped
    sources = [
        path.read_text()
        for folder in ("layers/runtime/python/cairn", "functions")
        for path in (root / folder).rglob("*.py")
    ]
    literals = {
        name for text in sources for name in re.findall(r"[\"']([A-Z][A-Z0-9_]+)[\"']", text)
    }
    used = mapped | {name for name in literals if name.startswith("CAIRN_")}
    page = (root / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]{3,})`", page))
    assert len(mapped) > 50
    assert used - documented == set(), "read by the code, missing from docs/configuration.md"
    assert documented - literals - mapped == set(), "documented, read by no code"


def test_tests_reach_no_provider_key_and_no_other_machine() -> None:
    """The suite's guards (tests/conftest.py): the environment's provider keys are gone,
    and a connection anywhere but this machine fails naming the address."""
    import socket

    import pytest

    from tests.conftest import PROVIDER_KEYS, OutsideConnection

    assert not [name for name in PROVIDER_KEYS if name in os.environ]
    with socket.socket() as sock, pytest.raises(OutsideConnection, match=r"93\.184\.215\.14:443"):
        sock.connect(("93.184.215.14", 443))


def test_settings_are_grouped_by_what_reads_them_and_each_edge_adds_its_own() -> None:
    """Each field is read from one variable named in its group; an edge's group is in its
    own folder and reaches the process's settings only through assembly."""
    from cairn.assembly.edges import SETTINGS
    from cairn.config import Group
    from cairn.mcp_servers.settings import McpSettings
    from cairn.telegram.settings import TelegramSettings

    groups = [g for g in Settings.__mro__ if issubclass(g, Group) and vars(g).get("ENV")]
    assert len(groups) >= 8
    named = [f for g in groups for f in vars(g)["ENV"]]
    assert len(named) == len(set(named)), "a field in two groups"
    assert "telegram_api_url" not in Settings.model_fields  # the core has no edge's setting
    made = SETTINGS.from_env(
        {"CAIRN_TELEGRAM_API_URL": "http://bots.test", "CAIRN_MCP_TIMEOUT_SECONDS": "7"}
    )
    assert TelegramSettings.within(made).telegram_api_url == "http://bots.test"
    assert McpSettings.within(made).mcp_timeout_seconds == 7
    with pytest.raises(TypeError, match="TelegramSettings"):
        TelegramSettings.within(Settings())
    with pytest.raises(ValidationError, match="mcp_timeout_seconds"):
        SETTINGS.from_env({"CAIRN_MCP_TIMEOUT_SECONDS": "0"})


def test_no_key_is_in_the_settings_repr() -> None:
    keys = {
        "api_key": "sk-cairn-secret-1",
        "openai_api_key": "sk-openai-secret-2",
        "anthropic_api_key": "sk-ant-secret-3",
        "gemini_api_key": "gm-secret-4",
        "exa_api_key": "exa-secret-5",
        "provider_key": "cHJvdmlkZXIta2V5LXNlY3JldC02",
    }
    made = Settings(**keys, bedrock_own_key=("AKIAX", "bedrock-secret-7", "us-east-1"))
    shown = repr(made) + str(made)
    assert "sk-openai-secret-2" not in shown and "bedrock-secret-7" not in shown
    assert not [k for k, v in keys.items() if v in shown]
    assert made.openai_api_key == "sk-openai-secret-2"  # kept, only not shown


def test_only_the_processs_own_settings_class_builds_a_validator() -> None:
    # Every group, `Settings` and the class assembly makes of them would each build one when
    # defined (a cold start's time); only the last reads the environment.
    from cairn.assembly.edges import SETTINGS

    code = (
        "from cairn import config; from cairn.assembly.edges import SETTINGS; "
        "SETTINGS.from_env({}); "
        "print(sorted(c.__name__ for c in {SETTINGS, *config.Group.__subclasses__(), "
        "config.Settings} if c.__pydantic_complete__))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [f"['{SETTINGS.__name__}']"]
