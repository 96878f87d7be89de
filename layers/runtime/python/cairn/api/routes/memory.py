"""Core-memory blocks (agent view and global `/v1/blocks/`) and archival memory (§7, §8)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import ValidationError

from cairn.api import http, letta
from cairn.api.requests import BlockUpdate, CreateBlock, CreatePassage
from cairn.api.routes.agents import agent_state, get_agent
from cairn.domain.base import utc_now
from cairn.domain.blocks import Block, BlockLimitError
from cairn.domain.passages import Archive
from cairn.engine import search
from cairn.engine.context import parse_when
from cairn.errors import InvalidArgumentError, NotFoundError, UnprocessableError
from cairn.store import archives, blocks
from cairn.store.db import Connection

router = APIGatewayHttpRouter()


def _edit(block: Block, req: BlockUpdate) -> Block:
    changes = req.model_dump(exclude_unset=True)
    try:
        return Block.model_validate(block.model_dump() | changes)
    except ValidationError as err:
        cause = (err.errors()[0].get("ctx") or {}).get("error")
        if isinstance(cause, BlockLimitError):
            raise InvalidArgumentError(f"INVALID_ARGUMENT: {cause}") from None
        raise UnprocessableError(str(err)) from None


def _save(conn: Connection, block: Block, edited: Block) -> Block:
    return blocks.update(conn, edited, expected_version=block.version, actor_type="user")


def _by_label(conn: Connection, org: str, agent_id: str, label: str) -> Block:
    block = blocks.for_agent_by_label(conn, org, agent_id, label)
    if block is None:
        raise NotFoundError(f"No block with label '{label}' found for agent '{agent_id}'")
    return block


@router.get("/agents/<agent_id>/core-memory/blocks")
def agent_blocks(agent_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        found = blocks.for_agent(conn, agent.organization_id, agent.id)
    return http.json_reply(200, [letta.block_json(b) for b in found])


@router.get("/agents/<agent_id>/core-memory/blocks/<label>")
def agent_block(agent_id: str, label: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        return http.json_reply(
            200, letta.block_json(_by_label(conn, agent.organization_id, agent.id, label))
        )


@router.patch("/agents/<agent_id>/core-memory/blocks/<label>")
def edit_agent_block(agent_id: str, label: str) -> Response[Any]:
    req: BlockUpdate = http.body(BlockUpdate)
    with http.rt().db.transaction() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        block = _by_label(conn, agent.organization_id, agent.id, label)
        return http.json_reply(200, letta.block_json(_save(conn, block, _edit(block, req))))


def _attach(agent_id: str, block_id: str, *, attach: bool) -> Response[Any]:
    http.check_id("block", block_id, what="block_id")
    with http.rt().db.transaction() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        org = agent.organization_id
        if blocks.get(conn, org, block_id) is None:
            raise NotFoundError(f"Block with id '{block_id}' not found")
        if attach:
            blocks.attach(conn, org, agent.id, block_id)
        else:
            blocks.detach(conn, org, agent.id, block_id)
        return http.json_reply(200, agent_state(conn, agent))


@router.patch("/agents/<agent_id>/core-memory/blocks/attach/<block_id>")
def attach_block(agent_id: str, block_id: str) -> Response[Any]:
    return _attach(agent_id, block_id, attach=True)


@router.patch("/agents/<agent_id>/core-memory/blocks/detach/<block_id>")
def detach_block(agent_id: str, block_id: str) -> Response[Any]:
    return _attach(agent_id, block_id, attach=False)


# -- global blocks -----------------------------------------------------------------------


def _get_block(conn: Connection, block_id: str) -> Block:
    http.check_id("block", block_id, what="block_id")
    block = blocks.get(conn, http.org_id(), block_id)
    if block is None:
        raise NotFoundError(f"Block with id '{block_id}' not found")
    return block


@router.post("/blocks/")
def create_block() -> Response[Any]:
    req: CreateBlock = http.body(CreateBlock)
    try:
        block = Block(organization_id=http.org_id(), **req.model_dump())
    except ValueError as err:
        raise UnprocessableError(str(err)) from None
    with http.rt().db.transaction() as conn:
        return http.json_reply(200, letta.block_json(blocks.create(conn, block)))


@router.get("/blocks/")
def list_blocks() -> Response[Any]:
    with http.rt().db.connection() as conn:
        found = blocks.list_blocks(
            conn,
            http.org_id(),
            label=http.query("label"),
            after=http.query("after"),
            before=http.query("before"),
            limit=http.query_int("limit", 50),
        )
    return http.json_reply(200, [letta.block_json(b) for b in found])


@router.get("/blocks/<block_id>")
def get_block(block_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        return http.json_reply(200, letta.block_json(_get_block(conn, block_id)))


@router.patch("/blocks/<block_id>")
def edit_block(block_id: str) -> Response[Any]:
    req: BlockUpdate = http.body(BlockUpdate)
    with http.rt().db.transaction() as conn:
        block = _get_block(conn, block_id)
        return http.json_reply(200, letta.block_json(_save(conn, block, _edit(block, req))))


@router.delete("/blocks/<block_id>")
def delete_block(block_id: str) -> Response[Any]:
    with http.rt().db.transaction() as conn:
        block = _get_block(conn, block_id)
        blocks.delete(conn, block.organization_id, block.id)
    return http.json_reply(200, None)


@router.get("/blocks/<block_id>/agents")
def block_agents(block_id: str) -> Response[Any]:
    from cairn.store import agents

    with http.rt().db.connection() as conn:
        block = _get_block(conn, block_id)
        found = [
            agents.get(conn, block.organization_id, a)
            for a in blocks.agent_ids(conn, block.organization_id, block.id)
        ]
        return http.json_reply(200, [agent_state(conn, a) for a in found if a is not None])


# -- archival memory ---------------------------------------------------------------------


@router.get("/agents/<agent_id>/archival-memory")
def list_passages(agent_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        archive = archives.archive_for_agent(conn, agent.organization_id, agent.id)
        if archive is None:
            return http.json_reply(200, [])
        ascending = http.query_bool("ascending", True)
        found = archives.list_passages(
            conn,
            agent.organization_id,
            archive.id,
            after=http.query("after"),
            before=http.query("before"),
            limit=http.query_int("limit", 100),
            order="asc" if ascending else "desc",
        )
    search = http.query("search")
    if search:
        found = [p for p in found if search.lower() in p.text.lower()]
    return http.json_reply(200, [letta.passage_json(p) for p in found])


@router.post("/agents/<agent_id>/archival-memory")
def create_passage(agent_id: str) -> Response[Any]:
    req: CreatePassage = http.body(CreatePassage)
    rt = http.rt()
    with rt.db.connection() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
    # Embedded before the transaction opens: no lock is held during the model call.
    embedder = rt.engine.embedder_of(agent)
    with rt.db.transaction() as conn:
        org = agent.organization_id
        archive = archives.archive_for_agent(conn, org, agent.id)
        if archive is None:
            archive = archives.create_archive(
                conn,
                Archive(
                    organization_id=org,
                    name=f"{agent.name} archive",
                    embedding_config=agent.embedding_config,
                ),
            )
            archives.attach_archive(conn, org, archive.id, agent.id)
        passage = search.new_passage(
            agent, archive, req.text, req.tags, embedder, created_at=req.created_at or utc_now()
        )
        stored, _ = archives.insert_passage(conn, passage)  # an identical text: the stored one
    return http.json_reply(200, [letta.passage_json(stored)])


@router.get("/agents/<agent_id>/archival-memory/search")
def search_passages(agent_id: str) -> Response[Any]:
    query = http.query("query")
    if not query:
        raise UnprocessableError("query: field required")
    mode = http.query("tag_match_mode", "any")
    if mode not in ("any", "all"):
        raise UnprocessableError("tag_match_mode: must be any or all")
    rt = http.rt()
    with rt.db.connection() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        archive = archives.archive_for_agent(conn, agent.organization_id, agent.id)
        tz = agent.timezone
        found = search.archival(
            conn,
            agent,
            archive,
            query,
            rt.engine.embedder_of(agent),
            tags=http.query_list("tags") or None,
            match_all=mode == "all",
            start=_when(http.query("start_datetime"), tz),
            end=_when(http.query("end_datetime"), tz, end=True),
            limit=http.query_int("top_k", 10),
        )
    # Letta's route shows no relevance or id (contract §8)
    results = [{k: r[k] for k in ("timestamp", "content", "tags")} for r in found]
    return http.json_reply(200, {"results": results, "count": len(results)})


def _when(value: str | None, tz: str, *, end: bool = False) -> datetime | None:
    try:
        return parse_when(value, tz, end=end)
    except ValueError as err:
        raise UnprocessableError(str(err)) from None


@router.delete("/agents/<agent_id>/archival-memory/<memory_id>")
def delete_passage(agent_id: str, memory_id: str) -> Response[Any]:
    http.check_id("passage", memory_id, what="memory_id")
    with http.rt().db.transaction() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        archive = archives.archive_for_agent(conn, agent.organization_id, agent.id)
        passage = archives.get_passage(conn, agent.organization_id, memory_id)
        if passage is None or archive is None or passage.archive_id != archive.id:
            raise NotFoundError(f"Passage with id '{memory_id}' not found")
        archives.delete_passage(conn, agent.organization_id, memory_id)
    return http.json_reply(200, {"message": f"Memory id={memory_id} successfully deleted"})
