"""Agents as Letta's AgentState, and an agent's context overview."""

from __future__ import annotations

from typing import Any

from cairn.api.letta.groups import group_json
from cairn.api.letta.identities import identity_json
from cairn.api.letta.memory import block_json
from cairn.api.letta.messages import message_json
from cairn.api.letta.times import iso
from cairn.api.letta.tools import tool_json
from cairn.domain import model_settings
from cairn.domain.agent_secrets import AgentSecret
from cairn.domain.agents import Agent
from cairn.domain.blocks import Block
from cairn.domain.tools import Tool
from cairn.run.steps.prompt import CHARS_PER_TOKEN
from cairn.services.agents import AgentView, ContextOverview


def handle(endpoint_type: str, model: str) -> str:
    return f"{endpoint_type}/{model}"


def agent_json(
    agent: Agent, *, blocks: list[Block] | None = None, tools: list[Tool] | None = None
) -> dict[str, Any]:
    data = agent.model_dump(
        mode="json",
        exclude={"organization_id", "version", "context_tokens", "context_tokens_upto"},
    )
    block_list = [block_json(b) for b in blocks or ()]
    llm = agent.llm_config
    data["llm_config"]["temperature"] = llm.shown_temperature
    embedding = agent.embedding_config
    return data | {
        "model": llm.handle or handle(llm.model_endpoint_type, llm.model),
        "embedding": (
            embedding.handle or handle(embedding.embedding_endpoint_type, embedding.embedding_model)
        )
        if embedding
        else None,
        "blocks": block_list,
        "tools": [tool_json(t) for t in tools or ()],
        "memory": {
            "agent_type": agent.agent_type,
            "blocks": block_list,
            "file_blocks": [],
            "prompt_template": "",
        },
        "sources": [],
        "identities": [],
        "identity_ids": [],
        "secrets": [],
        "tool_exec_environment_variables": [],
        "multi_agent_group": None,
        "managed_group": None,
        "response_format": None,
        "model_settings": model_settings.of(llm),
        "max_files_open": agent.max_files_open or 10,
        "per_file_view_window_char_limit": agent.per_file_view_window_char_limit or 25_000,
        "created_at": iso(agent.created_at),
        "updated_at": iso(agent.updated_at),
        "last_run_completion": iso(agent.last_run_completion),
    }


def view_json(view: AgentView) -> dict[str, Any]:
    """An AgentState: the agent and, when they were read, its blocks and tools."""
    data = agent_json(view.agent, blocks=view.blocks, tools=view.tools)
    if not view.relations:
        data["tags"] = []
    if view.group is not None:
        data["multi_agent_group"] = group_json(view.group)
    if view.identities:
        data["identities"] = [identity_json(i) for i in view.identities]
        data["identity_ids"] = [i.id for i in view.identities]
    # Shown to its own organization as Letta shows them: the value opened (Letta's value_enc
    # is its own ciphertext; Cairn's stays in the database).
    data["secrets"] = [secret_json(s) for s in view.secrets]
    data["tool_exec_environment_variables"] = data["secrets"]
    return data


def secret_json(secret: AgentSecret) -> dict[str, Any]:
    return {
        "id": secret.id,
        "key": secret.key,
        "value": secret.value,
        "description": secret.description,
        "organization_id": secret.organization_id,
        "agent_id": secret.agent_id,
        "value_enc": None,
        "created_by_id": None,
        "last_updated_by_id": None,
        "created_at": iso(secret.created_at),
        "updated_at": iso(secret.updated_at),
    }


def context_json(overview: ContextOverview) -> dict[str, Any]:
    """Letta's ContextWindowOverview, token counts estimated at four characters a token."""
    agent = overview.agent
    system_tokens = len(agent.system) // CHARS_PER_TOKEN
    core_tokens = len(overview.core_memory) // CHARS_PER_TOKEN
    fn_tokens = len(str(overview.functions)) // CHARS_PER_TOKEN
    return {
        "context_window_size_max": agent.llm_config.context_window,
        "context_window_size_current": overview.message_tokens + fn_tokens,
        "num_messages": len(agent.message_ids),
        "num_archival_memory": overview.archival_count,
        "num_recall_memory": overview.recall_count,
        "num_tokens_external_memory_summary": 0,
        "external_memory_summary": "",
        "num_tokens_system": system_tokens,
        "system_prompt": agent.system,
        "num_tokens_core_memory": core_tokens,
        "core_memory": overview.core_memory,
        "num_tokens_summary_memory": 0,
        "summary_memory": None,
        "num_tokens_functions_definitions": fn_tokens,
        "functions_definitions": overview.functions,
        "num_tokens_messages": overview.message_tokens,
        # Letta's Message, as its schema lists it (no other field: it forbids them).
        "messages": [message_json(m) for m in overview.context],
    }
