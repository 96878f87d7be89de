"""Tenants: who a key belongs to, the local stack's own tenant, a deployment's first one."""

from __future__ import annotations

from typing import Any

from cairn.domain import Organization, User
from cairn.errors import InvalidArgumentError, NotFoundError
from cairn.store import Database, tenancy
from cairn.tools import egress


def organization_of(db: Database, token: str) -> str | None:
    """The organization an API key opens, or None for an unknown or revoked key."""
    with db.connection() as conn:
        key = tenancy.authenticate(conn, token)
    return key.organization_id if key is not None else None


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
        _, plain = tenancy.create_api_key(conn, org.id, person.id, name="first key")
    return {"organization_id": org.id, "user_id": person.id, "api_key": plain}


def set_tool_hosts(db: Database, org_id: str, hosts: Any) -> dict[str, Any]:
    """Replace the hosts an organization's custom tools may reach (`[]`: no network).

    An operator's action (the migrate function, `make invoke`), not the organization's: a
    tenant widening its own tools' reach is what the allow-list exists to prevent.
    """
    if not isinstance(hosts, list):
        raise InvalidArgumentError('hosts: a list of host patterns, e.g. ["api.example.com"]')
    try:
        kept = egress.check_hosts(hosts)
    except ValueError as err:
        raise InvalidArgumentError(f"hosts: {err}") from None
    with db.transaction() as conn:
        org = tenancy.set_tool_hosts(conn, org_id, kept)
    if org is None:
        raise NotFoundError(f"Organization {org_id} not found")
    return {"organization_id": org.id, "tool_hosts": org.tool_hosts}
