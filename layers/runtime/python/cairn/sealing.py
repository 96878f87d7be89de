"""Values sealed at rest: AES-GCM under a 32-byte key, each bound to where it belongs (its
organization, agent and name), so a sealed value copied to another row does not open.

The key comes from the caller: locally the envelope key (`CAIRN_PROVIDER_KEY` or the data
directory's key file), on AWS the stack's sealing-key secret (adapters/aws/secrets.py).
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cairn.config import Settings

NONCE_BYTES = 12


def envelope_key(settings: Settings) -> bytes:
    """CAIRN_PROVIDER_KEY (32 bytes, base64), else the data directory's key file, made with
    owner-only access the first time: the local stack's key for what it seals."""
    if settings.provider_key:
        return base64.b64decode(settings.provider_key)
    path = Path(settings.data_dir) / "provider-key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(base64.b64encode(os.urandom(32)).decode())
    return base64.b64decode(path.read_text().strip())


class SealError(ValueError):
    """A sealed value that does not open here (another key, another place, tampered)."""


class Sealer:
    def __init__(self, key: Callable[[], bytes]) -> None:
        self._key = key  # read on first use
        self._aead: Any = None
        self._lock = threading.Lock()

    def _cipher(self) -> Any:
        with self._lock:
            if self._aead is None:
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM

                key = self._key()
                if len(key) != 32:
                    raise ValueError("the sealing key must be 32 bytes")
                self._aead = AESGCM(key)
            return self._aead

    def seal(self, plain: str, bound: str) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        sealed: bytes = self._cipher().encrypt(nonce, plain.encode(), bound.encode())
        return nonce + sealed

    def open(self, sealed: bytes, bound: str) -> str:
        from cryptography.exceptions import InvalidTag

        try:
            plain: bytes = self._cipher().decrypt(
                sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], bound.encode()
            )
        except InvalidTag:
            raise SealError(f"a sealed value that does not open as {bound!r}") from None
        return plain.decode()
