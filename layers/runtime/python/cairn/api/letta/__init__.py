"""Stored rows as Letta's wire objects, one module per resource; the names are all here."""

from __future__ import annotations

from cairn.api.letta.agents import agent_json, context_json, handle, view_json
from cairn.api.letta.groups import group_json
from cairn.api.letta.identities import identity_json
from cairn.api.letta.memory import (
    agent_file_json,
    archive_json,
    block_json,
    file_json,
    file_passage_json,
    folder_json,
    passage_json,
    search_result_json,
)
from cairn.api.letta.messages import (
    ASSISTANT_KWARG,
    ASSISTANT_TOOL,
    edited_json,
    expand,
    hides_return,
    letta_messages,
    message_json,
    tool_return_text,
)
from cairn.api.letta.models import embedding_model_json, model_json, provider_json
from cairn.api.letta.runs import (
    batch_json,
    response_json,
    run_json,
    run_metrics_json,
    step_json,
    step_metrics_json,
    trace_json,
    usage_json,
)
from cairn.api.letta.sandbox import sandbox_config_json, sandbox_env_var_json
from cairn.api.letta.times import iso
from cairn.api.letta.tools import execution_json, tool_json, tool_return_json

__all__ = [
    "ASSISTANT_KWARG",
    "ASSISTANT_TOOL",
    "agent_file_json",
    "agent_json",
    "archive_json",
    "batch_json",
    "block_json",
    "context_json",
    "edited_json",
    "embedding_model_json",
    "execution_json",
    "expand",
    "file_json",
    "file_passage_json",
    "folder_json",
    "group_json",
    "handle",
    "hides_return",
    "identity_json",
    "iso",
    "letta_messages",
    "message_json",
    "model_json",
    "passage_json",
    "provider_json",
    "response_json",
    "run_json",
    "run_metrics_json",
    "sandbox_config_json",
    "sandbox_env_var_json",
    "search_result_json",
    "step_json",
    "step_metrics_json",
    "tool_json",
    "tool_return_json",
    "tool_return_text",
    "trace_json",
    "usage_json",
    "view_json",
]
