"""Organizations, users and API keys."""

from __future__ import annotations

from typing import Any, NamedTuple

from cairn.domain.tenancy import (
    ApiKey,
    Organization,
    User,
    generate_api_key,
    hash_api_key,
    visible_prefix,
)
from cairn.store.db import Connection
from cairn.store.rows import from_row, to_params
from cairn.store.sql_text import Native

INSERT_ORGANIZATION = """
INSERT INTO organizations (id, name, created_at, tool_hosts)
VALUES (%(id)s, %(name)s, %(created_at)s, %(tool_hosts)s)
"""
SELECT_ORGANIZATION = "SELECT * FROM organizations WHERE id = %(id)s"
SELECT_TOOL_HOSTS = "SELECT tool_hosts FROM organizations WHERE id = %(id)s"
UPDATE_TOOL_HOSTS = """
UPDATE organizations SET tool_hosts = %(hosts)s WHERE id = %(id)s RETURNING *
"""

INSERT_USER = """
INSERT INTO users (id, organization_id, name, created_at)
VALUES (%(id)s, %(organization_id)s, %(name)s, %(created_at)s)
"""
SELECT_USER = "SELECT * FROM users WHERE organization_id = %(org)s AND id = %(id)s"

INSERT_API_KEY = """
INSERT INTO api_keys (id, organization_id, user_id, name, key_hash, key_prefix, created_at)
VALUES (%(id)s, %(organization_id)s, %(user_id)s, %(name)s, %(key_hash)s, %(key_prefix)s,
        %(created_at)s)
"""
SELECT_API_KEY = "SELECT * FROM api_keys WHERE organization_id = %(org)s AND id = %(id)s"
# The one unscoped lookup: it is how a request finds its organization. Every request asks
# (no cache: a revoked key fails on the very next request, in every process). It reads; the
# key's last use is written at most once a minute, so a busy key costs no commit per request,
# unless its organization has a rate limit (migration 0037): then it counts the key's
# requests in the calendar minute, in the same statement (no round trip of its own).
AUTHENTICATE = """
WITH found AS (
    SELECT k.*, l.requests_per_minute AS rate_limit
    FROM api_keys k LEFT JOIN org_limits l ON l.organization_id = k.organization_id
    WHERE k.key_hash = %(key_hash)s AND k.revoked_at IS NULL
), touched AS (
    UPDATE api_keys k
    SET last_used_at = CASE WHEN found.last_used_at IS NULL
                                 OR found.last_used_at < now() - interval '1 minute'
                            THEN now() ELSE k.last_used_at END,
        minute_start = CASE WHEN found.rate_limit IS NULL THEN k.minute_start
                            ELSE date_trunc('minute', now()) END,
        minute_count = CASE WHEN found.rate_limit IS NULL THEN k.minute_count
                            WHEN k.minute_start = date_trunc('minute', now())
                            THEN k.minute_count + 1 ELSE 1 END
    FROM found
    WHERE k.id = found.id
      AND (found.rate_limit IS NOT NULL OR found.last_used_at IS NULL
           OR found.last_used_at < now() - interval '1 minute')
    RETURNING k.minute_count
)
SELECT found.*, (SELECT minute_count FROM touched) AS requests_this_minute,
       ceil(60 - extract(epoch FROM now() - date_trunc('minute', now())))::int
           AS minute_left_seconds
FROM found
"""
# Planned on every request behind RDS Proxy, the key's check: a function too (migration 0051).
# Its result is the key's row: a column added to the table needs the function again.
AUTHENTICATING = Native.of(AUTHENTICATE).served("cairn_authenticate", ("text",))
# Operators' views: every organization, and one organization's keys (never their hashes).
LIST_ORGANIZATIONS = """
SELECT o.*, (SELECT count(*) FROM api_keys k
             WHERE k.organization_id = o.id AND k.revoked_at IS NULL) AS active_keys
FROM organizations o ORDER BY o.created_at, o.id
"""
LIST_API_KEYS = """
SELECT id, organization_id, user_id, name, key_prefix, created_at, last_used_at, revoked_at
FROM api_keys WHERE organization_id = %(org)s ORDER BY created_at, id
"""
FIRST_USER = "SELECT * FROM users WHERE organization_id = %(org)s ORDER BY created_at, id LIMIT 1"
REVOKE_API_KEY = """
UPDATE api_keys SET revoked_at = now()
WHERE organization_id = %(org)s AND id = %(id)s AND revoked_at IS NULL
"""


def create_organization(conn: Connection, org: Organization) -> Organization:
    conn.execute(INSERT_ORGANIZATION, to_params(org))
    return org


def get_organization(conn: Connection, org_id: str) -> Organization | None:
    return from_row(Organization, conn.execute(SELECT_ORGANIZATION, {"id": org_id}).fetchone())


def tool_hosts(conn: Connection, org_id: str) -> tuple[str, ...]:
    row = conn.execute(SELECT_TOOL_HOSTS, {"id": org_id}).fetchone()
    return tuple(row["tool_hosts"]) if row else ()


def set_tool_hosts(conn: Connection, org_id: str, hosts: list[str]) -> Organization | None:
    row = conn.execute(UPDATE_TOOL_HOSTS, {"id": org_id, "hosts": hosts}).fetchone()
    return from_row(Organization, row)


def create_user(conn: Connection, user: User) -> User:
    conn.execute(INSERT_USER, to_params(user))
    return user


def get_user(conn: Connection, org_id: str, user_id: str) -> User | None:
    row = conn.execute(SELECT_USER, {"org": org_id, "id": user_id}).fetchone()
    return from_row(User, row)


def create_api_key(
    conn: Connection, org_id: str, user_id: str, *, name: str = "", key: str | None = None
) -> tuple[ApiKey, str]:
    """Store a new key (given, or generated) and return it with the plain key, shown once."""
    plain = key or generate_api_key()
    api_key = ApiKey(
        organization_id=org_id, user_id=user_id, name=name, key_prefix=visible_prefix(plain)
    )
    conn.execute(INSERT_API_KEY, {**to_params(api_key), "key_hash": hash_api_key(plain)})
    return api_key, plain


def get_api_key(conn: Connection, org_id: str, key_id: str) -> ApiKey | None:
    return from_row(ApiKey, conn.execute(SELECT_API_KEY, {"org": org_id, "id": key_id}).fetchone())


def _key_row(conn: Connection, plain_key: str) -> dict[str, Any] | None:
    return AUTHENTICATING.execute(conn, {"key_hash": hash_api_key(plain_key)}).fetchone()


def authenticate(conn: Connection, plain_key: str) -> ApiKey | None:
    row = _key_row(conn, plain_key)
    return None if row is None else ApiKey.model_validate(row)


class Admission(NamedTuple):
    organization_id: str | None  # None: an unknown or revoked key
    over: int | None  # the requests-per-minute limit this request went past, if it did
    seconds_left: int  # in the minute


def admit(conn: Connection, plain_key: str) -> Admission:
    """A request's key: its organization, its organization's requests-per-minute limit
    (None: none) when this request, counted, went past it, and the seconds left in the
    minute. Only the organization is taken from the key's row: validating the whole ApiKey
    on every request was about 1 % of a message's CPU in the request's thread."""
    row = _key_row(conn, plain_key)
    if row is None:
        return Admission(None, None, 0)
    limit, count = row["rate_limit"], row["requests_this_minute"]
    over = limit if limit is not None and count is not None and count > limit else None
    return Admission(row["organization_id"], over, int(row["minute_left_seconds"]))


def revoke_api_key(conn: Connection, org_id: str, key_id: str) -> bool:
    return conn.execute(REVOKE_API_KEY, {"org": org_id, "id": key_id}).rowcount == 1


def list_organizations(conn: Connection) -> list[dict[str, object]]:
    return [dict(r) for r in conn.execute(LIST_ORGANIZATIONS).fetchall()]


def list_api_keys(conn: Connection, org_id: str) -> list[ApiKey]:
    return [ApiKey.model_validate(r) for r in conn.execute(LIST_API_KEYS, {"org": org_id})]


def first_user(conn: Connection, org_id: str) -> User | None:
    return from_row(User, conn.execute(FIRST_USER, {"org": org_id}).fetchone())
