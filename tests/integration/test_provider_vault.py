"""Where organizations' provider keys are kept: Secrets Manager (through moto) on AWS, and
sealed in the row with the local envelope key, bound to its organization and id."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import boto3
import pytest
from cryptography.exceptions import InvalidTag
from moto import mock_aws

from cairn.adapters.aws.provider_secrets import SecretsManagerVault
from cairn.adapters.chosen import vault_for
from cairn.config import Settings
from cairn.domain.ids import new_id
from cairn.domain.providers import Provider
from cairn.run.provider_vault import EnvelopeVault
from cairn.sealing import envelope_key


def provider(org: str | None = None) -> Provider:
    return Provider(organization_id=org or new_id("org"), name="team", provider_type="openai")


def test_secrets_manager_keeps_one_secret_per_provider_under_the_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        vault = vault_for(Settings(provider_secret_prefix="Cairn/providers"))
        assert isinstance(vault, SecretsManagerVault)
        made = vault.seal(provider(), {"api_key": "sk-one"})
        assert (
            made.key_sealed is None and made.key_ref and ":secret:Cairn/providers/" in made.key_ref
        )
        assert vault.open(made) == {"api_key": "sk-one"}
        assert vault.seal(made, {"api_key": "sk-two"}).key_ref == made.key_ref  # rotated in place
        assert vault.open(made) == {"api_key": "sk-two"}
        client = boto3.client("secretsmanager")
        (listed,) = client.list_secrets()["SecretList"]
        assert listed["Name"] == f"Cairn/providers/{made.organization_id}/{made.id}"
        # Sealed again for a row never written (an import killed between the two, run
        # again with the provider's Letta id): the same secret, the new value.
        unwritten = made.model_copy(update={"key_ref": None})
        assert vault.seal(unwritten, {"api_key": "sk-three"}).key_ref == made.key_ref
        assert vault.open(made) == {"api_key": "sk-three"}
        vault.drop(made)
        assert client.list_secrets()["SecretList"] == []


def test_the_envelope_seals_and_binds_the_key_to_its_row(tmp_path: Path) -> None:
    vault = vault_for(Settings(data_dir=tmp_path))
    assert isinstance(vault, EnvelopeVault)
    assert not (tmp_path / "provider-key").exists()  # no key file until a key is sealed
    sealed = vault.seal(provider(), {"api_key": "sk-secret-value"})
    key_file = tmp_path / "provider-key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert b"sk-secret-value" not in (sealed.key_sealed or b"")
    assert vault.open(sealed) == {"api_key": "sk-secret-value"}
    moved = sealed.model_copy(update={"organization_id": new_id("org")})
    with pytest.raises(InvalidTag):  # copied to another organization's row: does not open
        vault.open(moved)
    again = vault_for(Settings(data_dir=tmp_path))  # the same key file after a restart
    assert again.open(sealed) == {"api_key": "sk-secret-value"}


def test_a_configured_envelope_key_wins_and_must_be_32_bytes(tmp_path: Path) -> None:
    key = base64.b64encode(os.urandom(32)).decode()
    settings = Settings(data_dir=tmp_path, provider_key=key)
    assert envelope_key(settings) == base64.b64decode(key)
    vault_for(settings).seal(provider(), {"api_key": "k"})
    assert not (tmp_path / "provider-key").exists()
    short = vault_for(Settings(provider_key=base64.b64encode(b"short").decode()))
    with pytest.raises(ValueError, match="32 bytes"):
        short.seal(provider(), {"api_key": "k"})
