"""Tenants: who a key belongs to, the local stack's own tenant, a deployment's first one."""

from __future__ import annotations

from typing import Any

from cairn.domain import Organization, User
from cairn.domain.limits import too_many_requests
from cairn.errors import InvalidArgumentError, found
from cairn.store import Database, tenancy


def organization_of(db: Database, token: str) -> str | None:
    """The organization an API key opens, or None for an unknown or revoked key; a
    LimitExceededError past the organization's requests per minute for one key."""
    with db.connection() as conn:
        org, over, left = tenancy.admit(conn, token)
    if over is not None and org is not None:
        raise too_many_requests(org, over, left)
    return org


def ensure_local_tenant(db: Database, api_key: str | None) -> tuple[str, bool]:
    """Make sure `api_key` (or a new one) opens the local organization.

    Returns (plain key, whether it was created now). A key that already exists is reused, so
    a restarted `make dev` keeps working with the key it printed before.
    """
    with db.transaction() as conn:
        if api_key and tenancy.authenticate(conn, api_key):
            return api_key, False
        org = tenancy.create_organization(conn, Organization(name="local"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="local"))
        _, plain = tenancy.create_api_key(conn, org.id, user.id, name="local", key=api_key)
        return plain, True


def create_tenant(db: Database, organization: str, user: str) -> dict[str, str]:
    """A new organization with one user and one API key; the plain key is shown only here."""
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name=organization))
        person = tenancy.create_user(conn, User(organization_id=org.id, name=user))
        key, plain = tenancy.create_api_key(conn, org.id, person.id, name="first key")
    return {"organization_id": org.id, "user_id": person.id, "key_id": key.id, "api_key": plain}


def set_tool_hosts(db: Database, org_id: str, hosts: Any) -> dict[str, Any]:
    """Replace the hosts an organization's custom tools may reach (`[]`: no network).

    An operator's action (the migrate function, `make invoke`), not the organization's: a
    tenant widening its own tools' reach is what the allow-list exists to prevent.
    """
    if not isinstance(hosts, list):
        raise InvalidArgumentError('hosts: a list of host patterns, e.g. ["api.example.com"]')
    from cairn.tools import egress  # an operator's action: not loaded by requests

    try:
        kept = egress.check_hosts(hosts)
    except ValueError as err:
        raise InvalidArgumentError(f"hosts: {err}") from None
    with db.transaction() as conn:
        org = found(tenancy.set_tool_hosts(conn, org_id, kept), f"Organization {org_id} not found")
    return {"organization_id": org.id, "tool_hosts": org.tool_hosts}


def list_tenants(db: Database) -> dict[str, Any]:
    with db.connection() as conn:
        found = tenancy.list_organizations(conn)
    fields = ("id", "name", "active_keys", "tool_hosts")
    return {
        "organizations": [
            {**{f: o[f] for f in fields}, "created_at": str(o["created_at"])} for o in found
        ]
    }


def list_keys(db: Database, org_id: str) -> dict[str, Any]:
    with db.connection() as conn:
        _organization(conn, org_id)
        keys = tenancy.list_api_keys(conn, org_id)
    return {"organization_id": org_id, "keys": [k.model_dump(mode="json") for k in keys]}


def create_key(db: Database, org_id: str, name: str = "") -> dict[str, Any]:
    """Another key for the organization's first user; the plain key is shown only here."""
    with db.transaction() as conn:
        _organization(conn, org_id)
        person = tenancy.first_user(conn, org_id)
        if person is None:
            person = tenancy.create_user(conn, User(organization_id=org_id, name="admin"))
        key, plain = tenancy.create_api_key(conn, org_id, person.id, name=name)
    return {"organization_id": org_id, "key_id": key.id, "api_key": plain}


def revoke_key(db: Database, org_id: str, key_id: str) -> dict[str, Any]:
    """Revoked keys answer 401 from the next request on (a key is checked on every one)."""
    with db.transaction() as conn:
        found(
            tenancy.get_api_key(conn, org_id, key_id),
            f"API key {key_id} not found in organization {org_id}",
        )
        revoked = tenancy.revoke_api_key(conn, org_id, key_id)
    return {"organization_id": org_id, "key_id": key_id, "revoked": revoked}


def rotate_key(db: Database, org_id: str, key_id: str) -> dict[str, Any]:
    """A new key in the old one's place, in one transaction: the old one stops working as
    the new one starts."""
    with db.transaction() as conn:
        old = tenancy.get_api_key(conn, org_id, key_id)
        active = old if old is not None and old.revoked_at is None else None
        old = found(active, f"No active API key {key_id} in organization {org_id}")
        tenancy.revoke_api_key(conn, org_id, key_id)
        key, plain = tenancy.create_api_key(conn, org_id, old.user_id, name=old.name)
    return {"organization_id": org_id, "revoked": key_id, "key_id": key.id, "api_key": plain}


def _organization(conn: Any, org_id: str) -> Organization:
    return found(tenancy.get_organization(conn, org_id), f"Organization {org_id} not found")
