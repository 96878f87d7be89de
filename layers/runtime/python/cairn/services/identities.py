"""Identities (Letta's): create, upsert by key, modify, properties, delete; the agents and
blocks linked to each. Letta's rules: a modify adds links and merges properties by key; an
upsert of an existing key replaces its properties (and its agents, when it names them)."""

from __future__ import annotations

from cairn.domain.blocks import Block, BlockSearch
from cairn.domain.identities import Identity, IdentityProperty
from cairn.domain.ids import is_id
from cairn.errors import ConflictError, InvalidArgumentError, found, not_found
from cairn.run.runtime import Runtime
from cairn.services.pages import Page
from cairn.services.requests import IdentityCreate, IdentityUpdate, IdentityUpsert
from cairn.store import blocks
from cairn.store import identities as store
from cairn.store.db import Connection


def fetch(conn: Connection, org: str, identity_id: str) -> Identity:
    if not is_id(identity_id, "identity"):
        raise InvalidArgumentError(f"Invalid identity ID format: {identity_id}")
    return found(store.get(conn, org, identity_id), f"Identity with id={identity_id} not found")


def list_identities(
    rt: Runtime,
    org: str,
    *,
    name: str | None,
    identifier_key: str | None,
    identity_type: str | None,
    project_id: str | None,
    page: Page,
) -> list[Identity]:
    with rt.db.connection() as conn:
        return store.list_identities(
            conn,
            org,
            name=name,
            identifier_key=identifier_key,
            identity_type=identity_type,
            project_id=project_id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def count(rt: Runtime, org: str) -> int:
    with rt.db.connection() as conn:
        return store.count(conn, org)


def retrieve(rt: Runtime, org: str, identity_id: str) -> Identity:
    with rt.db.connection() as conn:
        return fetch(conn, org, identity_id)


def create(rt: Runtime, org: str, req: IdentityCreate, user_id: str | None = None) -> Identity:
    with rt.db.transaction() as conn:
        _key_free(conn, org, req.identifier_key, req.project_id)
        return _create(conn, org, req, user_id)


def upsert(rt: Runtime, org: str, req: IdentityUpsert, user_id: str | None = None) -> Identity:
    with rt.db.transaction() as conn:
        existing = store.by_key(conn, org, req.identifier_key, req.project_id)
        if existing is None:
            return _create(conn, org, req, user_id)
        # As Letta's upsert: block_ids are not part of the update it makes.
        change = IdentityUpdate(
            name=req.name,
            identity_type=req.identity_type,
            agent_ids=req.agent_ids,
            properties=req.properties,
        )
        return _update(conn, existing, change, replace=True)


def modify(rt: Runtime, org: str, identity_id: str, req: IdentityUpdate) -> Identity:
    with rt.db.transaction() as conn:
        return _update(conn, fetch(conn, org, identity_id), req, replace=False)


def set_properties(
    rt: Runtime, org: str, identity_id: str, properties: list[IdentityProperty]
) -> Identity:
    with rt.db.transaction() as conn:
        change = IdentityUpdate(properties=properties)
        return _update(conn, fetch(conn, org, identity_id), change, replace=True)


def delete(rt: Runtime, org: str, identity_id: str) -> None:
    with rt.db.transaction() as conn:
        fetch(conn, org, identity_id)
        store.delete(conn, org, identity_id)


def link(rt: Runtime, org: str, identity_id: str, kind: str, item_id: str, *, on: bool) -> None:
    """Attach (`on`) or detach an agent or block; the item must be the organization's."""
    with rt.db.transaction() as conn:
        fetch(conn, org, identity_id)
        if on:
            _link(conn, org, identity_id, kind, [item_id])
        else:
            store.unlink(conn, org, identity_id, kind, [item_id])


def blocks_of(
    rt: Runtime,
    org: str,
    identity_id: str,
    *,
    page: Page,
) -> list[Block]:
    with rt.db.connection() as conn:
        fetch(conn, org, identity_id)
        return blocks.list_blocks(
            conn,
            org,
            search=BlockSearch(identity_id=identity_id),
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def identities_for_agent(conn: Connection, org: str, agent_id: str, ids: list[str]) -> None:
    """The agent's identities become `ids` (an agent's create or modify): all must exist."""
    wanted = set(ids)
    for identity in store.of_agents(conn, org, [agent_id])[agent_id]:
        if identity.id not in wanted:
            store.unlink(conn, org, identity.id, "agent", [agent_id])
    for identity_id in ids:
        fetch(conn, org, identity_id)
        store.link(conn, org, identity_id, "agent", [agent_id])


def _key_free(
    conn: Connection, org: str, key: str, project_id: str | None, mine: str | None = None
) -> None:
    """A 409 naming the key if another identity of the organization and project has it (the
    unique index holds it under races too, with a plainer message)."""
    taken = store.by_key(conn, org, key, project_id)
    if taken is not None and taken.id != mine:
        raise ConflictError(
            f"An identity with identifier_key='{key}' and project_id='{project_id}' already exists"
        )


def _create(conn: Connection, org: str, req: IdentityCreate, user_id: str | None) -> Identity:
    """A new identity whose key is known to be free."""
    made = store.create(
        conn,
        Identity(
            organization_id=org,
            identifier_key=req.identifier_key,
            name=req.name,
            identity_type=req.identity_type,
            project_id=req.project_id,
            properties=req.properties or [],
            created_by_id=user_id,
        ),
    )
    _link(conn, org, made.id, "agent", req.agent_ids or [])
    _link(conn, org, made.id, "block", req.block_ids or [])
    return fetch(conn, org, made.id)


def _update(
    conn: Connection, existing: Identity, req: IdentityUpdate, *, replace: bool
) -> Identity:
    org = existing.organization_id
    properties = existing.properties
    if req.properties is not None:
        merged = {} if replace else {p.key: p for p in existing.properties}
        properties = list((merged | {p.key: p for p in req.properties}).values())
    key = req.identifier_key or existing.identifier_key
    if key != existing.identifier_key:
        _key_free(conn, org, key, existing.project_id, mine=existing.id)
    store.update(
        conn,
        existing.model_copy(
            update={
                "identifier_key": key,
                "name": req.name or existing.name,
                "identity_type": req.identity_type or existing.identity_type,
                "properties": properties,
            }
        ),
    )
    for kind, ids, had in (
        ("agent", req.agent_ids, existing.agent_ids),
        ("block", req.block_ids, existing.block_ids),
    ):
        if ids is None:
            continue
        if replace:
            store.unlink(conn, org, existing.id, kind, [i for i in had if i not in ids])
        _link(conn, org, existing.id, kind, ids)
    return fetch(conn, org, existing.id)


def _link(conn: Connection, org: str, identity_id: str, kind: str, ids: list[str]) -> None:
    """Link all of `ids`, or none: an id that is not the organization's is a 404 naming it."""
    if not ids:
        return
    store.link(conn, org, identity_id, kind, ids)
    missing = set(ids) - set(store.linked(conn, org, identity_id, kind))
    if missing:
        raise not_found(f"Items not found in {kind}s: {sorted(missing)}")
