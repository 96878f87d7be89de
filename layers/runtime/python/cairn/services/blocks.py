"""Core-memory blocks: an agent's view by label, and the organisation's blocks."""

from __future__ import annotations

from pydantic import ValidationError

from cairn.domain.blocks import Block, BlockLimitError, BlockSearch
from cairn.errors import InvalidArgumentError, UnprocessableError, found
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services.agents import AgentView
from cairn.services.pages import EVERYTHING, Page, window
from cairn.services.requests import BlockUpdate, CreateBlock
from cairn.store import agents, blocks, groups, history
from cairn.store.db import Connection


def _edited(block: Block, req: BlockUpdate) -> Block:
    """The block as the update leaves it, checked as Letta 0.16.1 checks it: a body whose own
    value exceeds its own limit fails Letta's request model (422, "Edit failed..."); a value
    over the stored limit, or a limit under the value, its block manager (400)."""
    if req.value is not None and req.limit is not None and len(req.value) > req.limit:
        raise UnprocessableError(
            f"Edit failed: Exceeds {req.limit} character limit (requested {len(req.value)})"
        )
    if req.limit is not None and req.value is None and req.limit < len(block.value):
        raise InvalidArgumentError(
            f"INVALID_ARGUMENT: Limit ({req.limit}) cannot be less than current value length "
            f"({len(block.value)} characters)"
        )
    try:
        return Block.model_validate(block.model_dump() | req.model_dump(exclude_unset=True))
    except ValidationError as err:
        cause = (err.errors()[0].get("ctx") or {}).get("error")
        if isinstance(cause, BlockLimitError):
            raise InvalidArgumentError(f"INVALID_ARGUMENT: {cause}") from None
        raise UnprocessableError(str(err)) from None


def _fetch(conn: Connection, org: str, block_id: str) -> Block:
    return found(blocks.get(conn, org, block_id), "Block", block_id)


def _by_label(conn: Connection, org: str, agent_id: str, label: str) -> Block:
    agent_service.fetch(conn, org, agent_id)
    block = found(
        blocks.for_agent_by_label(conn, org, agent_id, label),
        f"No block with label '{label}' found for agent '{agent_id}'",
    )
    return block


def of_agent(
    rt: Runtime,
    org: str,
    agent_id: str,
    *,
    page: Page = EVERYTHING,
) -> list[Block]:
    with rt.db.connection() as conn:
        agent_service.fetch(conn, org, agent_id)
        found = blocks.for_agent(conn, org, agent_id)
    return window(found, page)


def by_label(rt: Runtime, org: str, agent_id: str, label: str) -> Block:
    with rt.db.connection() as conn:
        return _by_label(conn, org, agent_id, label)


def edit_by_label(rt: Runtime, org: str, agent_id: str, label: str, req: BlockUpdate) -> Block:
    with rt.db.transaction() as conn:
        block = _by_label(conn, org, agent_id, label)
        edited = blocks.update(
            conn, _edited(block, req), expected_version=block.version, actor_type="user"
        )
        history.bump(conn, org, agent_id, f"block {label} edited")
        return edited


def attach(rt: Runtime, org: str, agent_id: str, block_id: str, *, attach: bool) -> AgentView:
    with rt.db.transaction() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
        _fetch(conn, org, block_id)
        if attach:
            blocks.attach(conn, org, agent.id, block_id)
            group = groups.managed_by(conn, org, agent.id) if agent.enable_sleeptime else None
            if group is not None and group.manager_type == "sleeptime":
                blocks.attach_to_sleeptime_agents(conn, org, group.agent_ids, block_id)
        else:
            blocks.detach(conn, org, agent.id, block_id)
        history.bump(conn, org, agent.id, f"block {'attached' if attach else 'detached'}")
        return agent_service.view_of(conn, agent, sealer=rt.engine.sealer)


def create(rt: Runtime, org: str, req: CreateBlock) -> Block:
    try:
        block = Block(organization_id=org, **req.model_dump())
    except ValueError as err:
        raise UnprocessableError(str(err)) from None
    with rt.db.transaction() as conn:
        return blocks.create(conn, block)


def list_blocks(
    rt: Runtime,
    org: str,
    *,
    label: str | None,
    page: Page,
    search: BlockSearch | None = None,
) -> list[Block]:
    with rt.db.connection() as conn:
        return blocks.list_blocks(
            conn,
            org,
            label=label,
            search=search,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def count(rt: Runtime, org: str) -> int:
    with rt.db.connection() as conn:
        return blocks.count(conn, org)


def retrieve(rt: Runtime, org: str, block_id: str) -> Block:
    with rt.db.connection() as conn:
        return _fetch(conn, org, block_id)


def edit(rt: Runtime, org: str, block_id: str, req: BlockUpdate) -> Block:
    with rt.db.transaction() as conn:
        block = _fetch(conn, org, block_id)
        return blocks.update(
            conn, _edited(block, req), expected_version=block.version, actor_type="user"
        )


def delete(rt: Runtime, org: str, block_id: str) -> None:
    with rt.db.transaction() as conn:
        _fetch(conn, org, block_id)
        blocks.delete(conn, org, block_id)


def agents_of(
    rt: Runtime,
    org: str,
    block_id: str,
    *,
    page: Page = EVERYTHING,
    relations: bool = True,
) -> list[AgentView]:
    with rt.db.connection() as conn:
        _fetch(conn, org, block_id)
        found = [agents.get(conn, org, a) for a in blocks.agent_ids(conn, org, block_id)]
        shown = window([a for a in found if a is not None], page)
        return [
            agent_service.view_of(conn, a, sealer=rt.engine.sealer, relations=relations)
            for a in shown
        ]
