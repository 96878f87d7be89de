"""Letta 0.16's stored provider keys (`providers.api_key_enc`, `access_key_enc`), opened for
the import.

Letta seals a key as base64(salt 16 | IV 12 | ciphertext | tag 16): AES-256-GCM under a key
derived from the server's LETTA_ENCRYPTION_KEY by PBKDF2-HMAC-SHA256 (that salt, 100,000
iterations, 32 bytes). A server run without LETTA_ENCRYPTION_KEY stores the key as it is, in
the same column. Letta tells the two apart by shape, with known key prefixes never taken for
sealed ones (`letta/helpers/crypto_utils.py`); so does this, so a key Letta could use, Cairn
can, and one Letta could not open is named rather than guessed at.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

# Letta's PLAINTEXT_PREFIXES: values starting so are keys as they are, whatever their shape.
PLAIN_PREFIXES = (
    "sk-",
    "pk-",
    "api-",
    "key-",
    "token-",
    "Bearer ",
    "xoxb-",
    "xoxp-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "AKIA",
    "ABIA",
    "ACCA",
    "ASIA",
)
SALT, IV, TAG = 16, 12, 16
ITERATIONS = 100_000


class SealedKeyError(ValueError):
    """A sealed key that could not be opened (no LETTA_ENCRYPTION_KEY, or not this one)."""


def looks_sealed(value: str) -> bool:
    if value.startswith(PLAIN_PREFIXES):
        return False
    try:
        # As Letta decodes it (characters outside the alphabet dropped, not refused).
        return len(base64.b64decode(value)) >= SALT + IV + TAG + 1
    except (binascii.Error, ValueError):
        return False


def open_key(stored: str, encryption_key: str | None) -> str:
    """The key as the provider takes it."""
    if not looks_sealed(stored):
        return stored
    if not encryption_key:
        raise SealedKeyError("it is encrypted: give the Letta server's LETTA_ENCRYPTION_KEY")
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    blob = base64.b64decode(stored)
    salt, iv, sealed = blob[:SALT], blob[SALT : SALT + IV], blob[SALT + IV :]
    key = hashlib.pbkdf2_hmac("sha256", encryption_key.encode(), salt, ITERATIONS, 32)
    try:
        return AESGCM(key).decrypt(iv, sealed, None).decode()  # the tag ends `sealed`
    except (InvalidTag, UnicodeDecodeError):
        raise SealedKeyError("it does not open with the LETTA_ENCRYPTION_KEY given") from None
