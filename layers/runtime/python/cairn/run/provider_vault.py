"""Where organizations' own provider keys are kept, and how a step gets one.

On AWS each key is a Secrets Manager secret of its own (`adapters/aws/provider_secrets.py`);
the database row holds the secret's ARN. Locally the key is sealed into the row with AES-GCM
under an envelope key (`CAIRN_PROVIDER_KEY`, or a key file made on first use in the data
directory), the row's organization and id as associated data, so a sealed key copied into
another row or organization does not open.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from cairn.domain.providers import Provider
from cairn.store import providers as store
from cairn.store.db import Database

# A step opens its organization's key at most this often (a changed key applies after it).
OPEN_SECONDS = 60.0


class ProviderVault(Protocol):
    def seal(self, provider: Provider, secret: dict[str, str]) -> Provider:
        """The provider with the secret put away (key_ref or key_sealed set)."""
        ...

    def open(self, provider: Provider) -> dict[str, str]: ...

    def drop(self, provider: Provider) -> None: ...


class EnvelopeVault:
    def __init__(self, key: Callable[[], bytes]) -> None:
        self._key = key  # read on first use (no key file until one is needed)
        self._cipher: Any = None

    @property
    def _aead(self) -> Any:
        if self._cipher is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            key = self._key()
            if len(key) != 32:
                raise ValueError("CAIRN_PROVIDER_KEY must be 32 bytes, base64-encoded")
            self._cipher = AESGCM(key)
        return self._cipher

    def seal(self, provider: Provider, secret: dict[str, str]) -> Provider:
        nonce = os.urandom(12)
        sealed = nonce + self._aead.encrypt(nonce, json.dumps(secret).encode(), _bound(provider))
        return provider.model_copy(update={"key_sealed": sealed, "key_ref": None})

    def open(self, provider: Provider) -> dict[str, str]:
        blob = provider.key_sealed or b""
        plain = self._aead.decrypt(blob[:12], blob[12:], _bound(provider))
        opened: dict[str, str] = json.loads(plain)
        return opened

    def drop(self, provider: Provider) -> None:
        pass  # the sealed key goes with its row


def _bound(provider: Provider) -> bytes:
    return f"{provider.organization_id}:{provider.id}".encode()


class ProviderKeys:
    """(organization, provider name) -> the provider and its opened key, for a step's model
    call; kept for OPEN_SECONDS, so a busy agent does not read the secret every step."""

    def __init__(self, db: Database, vault: ProviderVault) -> None:
        self.db, self.vault = db, vault
        self._opened: dict[tuple[str, str], tuple[float, Provider, dict[str, str]]] = {}
        self._lock = threading.Lock()

    def __call__(self, org_id: str, name: str) -> tuple[Provider, dict[str, str]] | None:
        now = time.monotonic()
        with self._lock:
            kept = self._opened.get((org_id, name))
        if kept is not None and now - kept[0] < OPEN_SECONDS:
            return kept[1], kept[2]
        with self.db.connection() as conn:
            provider = store.by_name(conn, org_id, name)
        if provider is None:
            return None
        secret = self.vault.open(provider)
        with self._lock:
            self._opened[(org_id, name)] = (now, provider, secret)
        return provider, secret

    def forget(self, org_id: str, name: str) -> None:
        with self._lock:
            self._opened.pop((org_id, name), None)
