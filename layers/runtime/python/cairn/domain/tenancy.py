"""Organizations, users and API keys. Keys are stored only as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from pydantic import Field

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.ids import OrgId, UserId, new_id

API_KEY_PREFIX = "sk-cairn-"


class Organization(DomainModel):
    id: OrgId = Field(default_factory=lambda: new_id("org"))
    name: str = Field(min_length=1, max_length=200)
    created_at: datetime = Field(default_factory=utc_now)
    # What its custom tools may reach (`cairn.tools.egress` patterns); empty: no network.
    tool_hosts: list[str] = Field(default_factory=list)


class User(DomainModel):
    id: UserId = Field(default_factory=lambda: new_id("user"))
    organization_id: OrgId
    name: str = Field(min_length=1, max_length=200)
    created_at: datetime = Field(default_factory=utc_now)


class ApiKey(DomainModel):
    id: str = Field(default_factory=lambda: new_id("apikey"))
    organization_id: OrgId
    user_id: UserId
    name: str = ""
    # A few first characters of the key (`visible_prefix`), so a person can tell keys apart
    # without the secret.
    key_prefix: str
    created_at: datetime = Field(default_factory=utc_now)
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None


def generate_api_key() -> str:
    # 32 random bytes: a fast hash is enough for a key with this much entropy (no bcrypt needed).
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def visible_prefix(key: str) -> str:
    """What of a key may be stored and shown: Cairn's marker and 4 random characters (of 43)
    for a key Cairn made; of any other key at most 4 characters and never more than a
    quarter of it, so a short key chosen by hand is never stored whole."""
    if key.startswith(API_KEY_PREFIX) and len(key) >= len(API_KEY_PREFIX) + 32:
        return key[: len(API_KEY_PREFIX) + 4]
    return key[: min(4, len(key) // 4)]
