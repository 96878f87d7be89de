"""An organization's own model providers (keys stay sealed or elsewhere: domain/providers)."""

from __future__ import annotations

from cairn.domain.providers import Provider
from cairn.store.db import Connection
from cairn.store.rows import Order, from_row, page, to_params

INSERT = """
INSERT INTO providers (id, organization_id, name, provider_type, base_url, region, api_version,
                       key_ref, key_sealed, key_hint, created_by_id, created_at, updated_at)
VALUES (%(id)s, %(organization_id)s, %(name)s, %(provider_type)s, %(base_url)s, %(region)s,
        %(api_version)s, %(key_ref)s, %(key_sealed)s, %(key_hint)s, %(created_by_id)s,
        %(created_at)s, %(updated_at)s)
RETURNING *
"""
UPDATE = """
UPDATE providers SET base_url = %(base_url)s, region = %(region)s,
    api_version = %(api_version)s, key_ref = %(key_ref)s, key_sealed = %(key_sealed)s,
    key_hint = %(key_hint)s, updated_at = now()
WHERE organization_id = %(organization_id)s AND id = %(id)s
RETURNING *
"""
SELECT = "SELECT * FROM providers WHERE organization_id = %(org)s AND id = %(id)s"
SELECT_BY_NAME = "SELECT * FROM providers WHERE organization_id = %(org)s AND name = %(name)s"
DELETE = "DELETE FROM providers WHERE organization_id = %(org)s AND id = %(id)s RETURNING *"


def create(conn: Connection, provider: Provider) -> Provider:
    return Provider.model_validate(conn.execute(INSERT, to_params(provider)).fetchone())


def update(conn: Connection, provider: Provider) -> Provider:
    return Provider.model_validate(conn.execute(UPDATE, to_params(provider)).fetchone())


def get(conn: Connection, org_id: str, provider_id: str) -> Provider | None:
    return from_row(Provider, conn.execute(SELECT, {"org": org_id, "id": provider_id}).fetchone())


def by_name(conn: Connection, org_id: str, name: str) -> Provider | None:
    row = conn.execute(SELECT_BY_NAME, {"org": org_id, "name": name}).fetchone()
    return from_row(Provider, row)


def delete(conn: Connection, org_id: str, provider_id: str) -> Provider | None:
    return from_row(Provider, conn.execute(DELETE, {"org": org_id, "id": provider_id}).fetchone())


def list_providers(
    conn: Connection,
    org_id: str,
    *,
    name: str | None = None,
    provider_type: str | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: int = 50,
    order: Order = "desc",
) -> list[Provider]:
    return page(
        conn,
        "providers",
        Provider,
        org_id,
        equals={"name": name, "provider_type": provider_type},
        after=after,
        before=before,
        limit=limit,
        order=order,
    )
