"""An organization's own providers (Letta's BYOK ones) come over with their keys: opened
with the Letta server's LETTA_ENCRYPTION_KEY where it stored them encrypted, taken as they
are where it had none, and put in Cairn's vault. The fixture's server had no providers, so
these tests add rows to their own restored copy of its dump, as Letta 0.16.1 writes them."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from cairn.assembly.operator import import_letta
from cairn.run.provider_vault import EnvelopeVault, ProviderVault
from cairn.store import providers
from cairn.store.db import Database
from tests.integration.test_letta_import import ORG, fingerprint, letta_url

LETTA_KEY = "the-letta-server's-encryption-key"


def letta_encrypt(plaintext: str, master_key: str) -> str:
    """What Letta 0.16.1's CryptoUtils.encrypt stores (letta/helpers/crypto_utils.py): the
    same primitives, called the same way."""
    salt, iv = os.urandom(16), os.urandom(12)
    kdf = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=salt, iterations=100000)
    encryptor = Cipher(algorithms.AES(kdf.derive(master_key.encode())), modes.GCM(iv)).encryptor()
    ciphertext = encryptor.update(plaintext.encode()) + encryptor.finalize()
    return base64.b64encode(salt + iv + ciphertext + encryptor.tag).decode()


# (id, name, type, api_key_enc, access_key_enc, legacy api_key, organization, category, deleted)
ROWS: list[tuple[Any, ...]] = [
    (
        "provider-00000000-0000-4000-8000-000000000001",
        "team-openai",
        "openai",
        letta_encrypt("sk-team-openai-1234", LETTA_KEY),
        None,
        None,
        ORG,
        "byok",
        False,
    ),
    # A server without LETTA_ENCRYPTION_KEY keeps the key as it is, in the same column.
    (
        "provider-00000000-0000-4000-8000-000000000002",
        "team-claude",
        "anthropic",
        "sk-ant-as-it-is-5678",
        None,
        None,
        ORG,
        "byok",
        False,
    ),
    # A row from before the _enc columns: the key in the older plaintext column.
    (
        "provider-00000000-0000-4000-8000-000000000003",
        "old-groq",
        "groq",
        None,
        None,
        "gsk_older_column_9abc",
        ORG,
        "byok",
        False,
    ),
    (
        "provider-00000000-0000-4000-8000-000000000004",
        "team-bedrock",
        "bedrock",
        letta_encrypt("bedrock-secret-key-def0", LETTA_KEY),
        letta_encrypt("AKIAEXAMPLEACCESS", LETTA_KEY),
        None,
        ORG,
        "byok",
        False,
    ),
    # Not to come over: deleted (Letta empties its keys), the server's own, a name Cairn's
    # handles use, and a key sealed under another server's key.
    (
        "provider-00000000-0000-4000-8000-000000000005",
        "gone",
        "openai",
        None,
        None,
        None,
        ORG,
        "byok",
        True,
    ),
    (
        "provider-00000000-0000-4000-8000-000000000006",
        "anthropic",
        "anthropic",
        "sk-ant-server",
        None,
        None,
        None,
        "base",
        False,
    ),
    (
        "provider-00000000-0000-4000-8000-000000000007",
        "openai",
        "openai",
        "sk-named-like-the-server",
        None,
        None,
        ORG,
        "byok",
        False,
    ),
    (
        "provider-00000000-0000-4000-8000-000000000008",
        "locked",
        "openai",
        letta_encrypt("sk-locked", "another-server's-key"),
        None,
        None,
        ORG,
        "byok",
        False,
    ),
]
IMPORTED = {
    "team-openai": "sk-team-openai-1234",
    "team-claude": "sk-ant-as-it-is-5678",
    "old-groq": "gsk_older_column_9abc",
    "team-bedrock": "bedrock-secret-key-def0",
}


def add_providers(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for row in ROWS:
            conn.execute(
                """INSERT INTO providers (id, name, provider_type, api_key_enc, access_key_enc,
                       api_key, organization_id, provider_category, is_deleted, base_url,
                       region)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, NULL,
                           CASE WHEN %s = 'bedrock' THEN 'us-west-2' END)""",
                (*row, row[2]),
            )


@pytest.fixture
def letta_with_providers(pg_dsn: str) -> Iterator[str]:
    restored = letta_url.__wrapped__(pg_dsn)  # type: ignore[attr-defined]
    copy: str = next(restored)
    add_providers(copy)
    yield copy
    next(restored, None)  # the copy is dropped


@pytest.fixture
def vault() -> ProviderVault:
    key = os.urandom(32)
    return EnvelopeVault(lambda: key)


def kept(db: Database) -> dict[str, Any]:
    with db.connection() as conn:
        return {p.name: p for p in providers.list_providers(conn, ORG, limit=100)}


def test_byok_providers_come_over_with_their_keys_opened_and_put_in_the_vault(
    db: Database, letta_with_providers: str, vault: ProviderVault
) -> None:
    before = fingerprint(letta_with_providers)
    report = import_letta(db, letta_with_providers, vault=vault, letta_key=LETTA_KEY)
    assert fingerprint(letta_with_providers) == before  # read only
    assert report.imported["providers"] == 4
    found = kept(db)
    assert set(found) == set(IMPORTED)
    for name, key in IMPORTED.items():
        provider = found[name]
        assert provider.id == next(r[0] for r in ROWS if r[1] == name)  # Letta's id kept
        assert vault.open(provider)["api_key"] == key and provider.key_hint == key[-4:]
        assert key.encode() not in (provider.key_sealed or b"")  # sealed, not stored plain
    bedrock = found["team-bedrock"]
    assert vault.open(bedrock) == {
        "api_key": "bedrock-secret-key-def0",
        "access_key": "AKIAEXAMPLEACCESS",
    }
    assert bedrock.region == "us-west-2" and found["old-groq"].provider_type == "groq"
    skipped = "\n".join(report.skipped)
    assert "provider openai (openai): the name is Cairn's own" in skipped
    assert "provider locked (openai): its key: it does not open" in skipped
    assert "gone" not in skipped and "sk-" not in skipped  # no key in the report

    again = import_letta(db, letta_with_providers, vault=vault, letta_key=LETTA_KEY)
    assert again.imported["providers"] == 0 and again.already["providers"] == 4


def test_without_the_letta_key_encrypted_ones_wait_for_a_second_run_with_it(
    db: Database, letta_with_providers: str, vault: ProviderVault
) -> None:
    first = import_letta(db, letta_with_providers, vault=vault)
    assert set(kept(db)) == {"team-claude", "old-groq"}  # the ones Letta kept as they are
    asked = [s for s in first.skipped if "give the Letta server's LETTA_ENCRYPTION_KEY" in s]
    assert sorted(s.split()[1] for s in asked) == ["locked", "team-bedrock", "team-openai"]
    second = import_letta(db, letta_with_providers, vault=vault, letta_key=LETTA_KEY)
    assert second.imported["providers"] == 2 and set(kept(db)) == set(IMPORTED)


def test_a_provider_whose_name_is_taken_here_is_left_and_named(
    db: Database, letta_with_providers: str, vault: ProviderVault
) -> None:
    from cairn.domain.providers import Provider

    import_letta(db, letta_with_providers, vault=vault, letta_key=LETTA_KEY)
    with db.transaction() as conn:  # a fresh organization state: another team-openai here
        conn.execute("DELETE FROM providers WHERE name = 'team-openai'")
        providers.create(
            conn, Provider(organization_id=ORG, name="team-openai", provider_type="openai")
        )
    report = import_letta(db, letta_with_providers, vault=vault, letta_key=LETTA_KEY)
    assert "provider team-openai (openai): a provider of that name exists" in "\n".join(
        report.skipped
    )
    assert kept(db)["team-openai"].id != ROWS[0][0]  # the one here stays


def test_an_import_killed_between_providers_finishes_when_run_again(
    db: Database, letta_with_providers: str, vault: ProviderVault
) -> None:
    from cairn.faults import SimulatedCrash

    def die(at: str, done: int, total: int) -> None:
        if at == "providers" and done == 2:
            raise SimulatedCrash("killed in providers")

    with pytest.raises(SimulatedCrash):
        import_letta(db, letta_with_providers, die, vault=vault, letta_key=LETTA_KEY)
    assert len(kept(db)) == 2
    import_letta(db, letta_with_providers, vault=vault, letta_key=LETTA_KEY)
    assert {n: vault.open(p)["api_key"] for n, p in kept(db).items()} == IMPORTED


def test_on_aws_cairn_admin_sends_the_letta_key_and_keys_become_secrets(
    db: Database, letta_with_providers: str, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`LETTA_ENCRYPTION_KEY=... cairn-admin --stack S import-letta URL`: the command carries
    the key to the migrate function, which keeps each provider's key as a secret under the
    stack's prefix (Secrets Manager through moto), as the providers API does."""
    import boto3
    from moto import mock_aws

    from cairn.adapters.local.lambdas import LocalContext, load_handler
    from cairn.local import admin

    monkeypatch.setenv("LETTA_ENCRYPTION_KEY", LETTA_KEY)
    command = admin.payload(admin.parse(["--stack", "S", "import-letta", letta_with_providers]))
    assert command["letta_encryption_key"] == LETTA_KEY
    monkeypatch.delenv("LETTA_ENCRYPTION_KEY")  # the function has only what the command says
    monkeypatch.setenv("DATABASE_URL", pg_dsn)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("CAIRN_PROVIDER_SECRET_PREFIX", "S/providers")
    with mock_aws():
        answer = load_handler("migrate")(command, LocalContext(function_name="migrate"))
        assert answer["finished"] and answer["imported"]["providers"] == 4
        secrets = boto3.client("secretsmanager")
        names = {s["Name"] for s in secrets.list_secrets()["SecretList"]}
        found = kept(db)
        assert names == {f"S/providers/{ORG}/{p.id}" for p in found.values()}
        opened = {
            n: secrets.get_secret_value(SecretId=p.key_ref)["SecretString"]
            for n, p in found.items()
        }
        assert all(key in opened[name] for name, key in IMPORTED.items())
