"""The local stack's tenant: one organization, one user, one API key."""

from __future__ import annotations

from cairn.domain import Organization, User
from cairn.store import Database, tenancy


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
