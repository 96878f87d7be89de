"""Stored rows as Letta's wire objects.

One stored message can become several LettaMessages sharing its id (reasoning, then the
tool call), exactly as a 0.16.1 server expands them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from cairn.domain import model_settings
from cairn.domain.agents import Agent
from cairn.domain.batches import Batch
from cairn.domain.blocks import Block
from cairn.domain.configs import EmbeddingConfig, LLMConfig
from cairn.domain.groups import Group
from cairn.domain.identities import Identity
from cairn.domain.ids import new_id
from cairn.domain.messages import Message, ReasoningContent, TextContent, ToolCall
from cairn.domain.passages import Archive, Passage
from cairn.domain.providers import Provider
from cairn.domain.runs import Run, Step, Usage
from cairn.domain.tools import Tool
from cairn.engine.prompt import CHARS_PER_TOKEN
from cairn.services.agents import AgentView, ContextOverview
from cairn.services.requests import LettaRequest
from cairn.tools.sandbox import SandboxResult

ASSISTANT_TOOL = "send_message"
ASSISTANT_KWARG = "message"


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def _date(moment: datetime) -> str:
    # LettaMessage dates are whole seconds with an offset.
    return moment.astimezone(UTC).replace(microsecond=0).isoformat()


def _call(call: ToolCall) -> dict[str, Any]:
    return {
        "name": call.function.name,
        "arguments": call.function.arguments,
        "tool_call_id": call.id,
    }


def _assistant_text(call: ToolCall) -> str | None:
    try:
        arguments = json.loads(call.function.arguments or "{}")
    except ValueError:
        return None
    text = arguments.get(ASSISTANT_KWARG) if isinstance(arguments, dict) else None
    return text if isinstance(text, str) else None


def tool_return_text(func_response: str | None) -> str:
    """The tool's own return, out of the `{"status", "message", "time"}` envelope the model
    reads. Letta shows `str()` of it, so a dict return reads as Python's repr (fixture A's
    conversation_search); a return that is no envelope is shown as stored."""
    text = func_response or ""
    try:
        packet = json.loads(text)
    except ValueError:
        return text
    if not isinstance(packet, dict) or "message" not in packet:
        return text
    value = packet["message"]
    return value if isinstance(value, str) else str(value)


def letta_messages(message: Message, *, use_assistant_message: bool = True) -> list[dict[str, Any]]:
    base: dict[str, Any] = {
        "id": message.id,
        "date": _date(message.created_at),
        "name": message.name,
        "otid": message.otid,
        "sender_id": message.sender_id,
        "step_id": message.step_id,
        "run_id": message.run_id,
        "seq_id": message.sequence_id,
    }
    if message.is_err:
        base["is_err"] = True

    def out(kind: str, **fields: Any) -> dict[str, Any]:
        return {**base, "message_type": kind, **fields}

    role = message.role
    if role == "system":
        return [out("system_message", content=message.text)]
    if role == "user":
        return [out("user_message", content=message.text)]
    if role == "tool":
        returns = [r for r in message.tool_returns or ()]
        if not returns:
            return []
        first = returns[0]
        return [
            out(
                "tool_return_message",
                tool_return=tool_return_text(first.func_response),
                status=first.status,
                tool_call_id=first.tool_call_id,
                stdout=first.stdout,
                stderr=first.stderr,
                name=message.name,
                tool_returns=[
                    {
                        "type": "tool",
                        "tool_call_id": r.tool_call_id,
                        "tool_return": tool_return_text(r.func_response),
                        "status": r.status,
                        "stdout": r.stdout,
                        "stderr": r.stderr,
                    }
                    for r in returns
                ],
            )
        ]
    if role == "approval" and not message.tool_calls:
        approvals = [a.model_dump(mode="json") for a in message.approvals or ()]
        first_approval = message.approvals[0] if message.approvals else None
        return [
            out(
                "approval_response_message",
                approvals=approvals,
                approve=first_approval.approve if first_approval else message.approve,
                approval_request_id=first_approval.tool_call_id
                if first_approval
                else message.approval_request_id,
                reason=first_approval.reason if first_approval else message.denial_reason,
            )
        ]
    items: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ReasoningContent):
            items.append(
                out(
                    "reasoning_message",
                    reasoning=part.reasoning,
                    signature=part.signature,
                    source="reasoner_model" if part.is_native else "non_reasoner_model",
                )
            )
    calls = list(message.tool_calls or ())
    if role == "approval":
        items.append(
            out(
                "approval_request_message",
                tool_call=_call(calls[0]),
                tool_calls=[_call(c) for c in calls],
            )
        )
        return items
    for part in message.content:
        if isinstance(part, TextContent) and part.text:
            items.append(out("assistant_message", content=part.text))
    plain = []
    for call in calls:
        text = _assistant_text(call) if call.function.name == ASSISTANT_TOOL else None
        if use_assistant_message and text is not None:
            items.append(out("assistant_message", content=text))
        else:
            plain.append(call)
    if plain:
        items.append(
            out(
                "tool_call_message", tool_call=_call(plain[0]), tool_calls=[_call(c) for c in plain]
            )
        )
    return items


def hides_return(message: Message, send_message_calls: set[str]) -> bool:
    """send_message's own return is plumbing: Letta shows the call as assistant text only."""
    return message.role == "tool" and all(
        r.tool_call_id in send_message_calls for r in message.tool_returns or ()
    )


def edited_json(message: Message, message_type: str) -> dict[str, Any]:
    """The LettaMessage a message PATCH answers: the edited one of the message's kinds."""
    shown = letta_messages(message)
    return next((m for m in shown if m["message_type"] == message_type), shown[0])


def expand(messages: list[Message], *, use_assistant_message: bool = True) -> list[dict[str, Any]]:
    send_calls = {
        c.id for m in messages for c in m.tool_calls or () if c.function.name == ASSISTANT_TOOL
    }
    out: list[dict[str, Any]] = []
    for m in messages:
        if use_assistant_message and hides_return(m, send_calls):
            continue
        out.extend(letta_messages(m, use_assistant_message=use_assistant_message))
    return out


def block_json(block: Block) -> dict[str, Any]:
    data = block.model_dump(mode="json", exclude={"organization_id", "version"})
    return data | {"created_at": iso(block.created_at), "updated_at": iso(block.updated_at)}


def tool_json(tool: Tool) -> dict[str, Any]:
    # Letta's Tool admits no other keys (additionalProperties false): no timestamps.
    data = tool.model_dump(
        mode="json", exclude={"organization_id", "metadata", "created_at", "updated_at"}
    )
    return data | {"metadata_": tool.metadata}


def model_json(config: LLMConfig) -> dict[str, Any]:
    """Letta's Model: the LLMConfig and the provider it comes from (fixture models.json)."""
    kind = config.model_endpoint_type
    return config.model_dump(mode="json") | {
        "handle": config.handle or handle(kind, config.model),
        "name": config.model,
        "display_name": config.model,
        "provider_type": kind,
        "provider_name": config.provider_name or kind,
        "model_type": "llm",
        "provider_category": config.provider_category or "base",
        "max_context_window": config.context_window,
        # Letta's Model has no null temperature: its default stands for "the provider's".
        "temperature": 0.7 if config.temperature is None else config.temperature,
    }


def embedding_model_json(config: EmbeddingConfig) -> dict[str, Any]:
    kind = config.embedding_endpoint_type
    return config.model_dump(mode="json") | {
        "handle": config.handle or handle(kind, config.embedding_model),
        "name": config.embedding_model,
        "display_name": config.embedding_model,
        "provider_type": kind,
        "provider_name": kind,
        "model_type": "embedding",
        "provider_category": "base",
    }


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
    if llm.temperature is None:  # Letta's LLMConfig has no null temperature (0.7 default)
        data["llm_config"]["temperature"] = 0.7
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
    return data


def identity_json(identity: Identity) -> dict[str, Any]:
    """Letta's Identity (its deprecated agent_ids and block_ids included, as it sends them)."""
    return {
        "id": identity.id,
        "identifier_key": identity.identifier_key,
        "name": identity.name,
        "identity_type": identity.identity_type,
        "project_id": identity.project_id,
        "agent_ids": identity.agent_ids,
        "block_ids": identity.block_ids,
        "organization_id": identity.organization_id,
        "properties": [p.model_dump(mode="json") for p in identity.properties],
    }


def run_json(run: Run) -> dict[str, Any]:
    data = run.model_dump(
        mode="json",
        exclude={
            "organization_id",
            "usage",
            "approval_task_token",
            "approval_answered_by",
            "task_token",
            "error",
            "updated_at",  # not in Letta's Run, which admits no other keys
        },
    )
    metadata = dict(run.metadata)
    if run.error:
        metadata["error"] = run.error
    return data | {
        "metadata": metadata,
        "created_at": iso(run.created_at),
        "completed_at": iso(run.completed_at),
        "request_config": {k: v for k, v in run.request_config.items() if k != "input"},
    }


def provider_json(provider: Provider) -> dict[str, Any]:
    """Letta's Provider; the key is never sent back, only its last four characters."""
    return {
        "id": provider.id,
        "name": provider.name,
        "provider_type": provider.provider_type,
        "provider_category": "byok",
        "api_key": f"...{provider.key_hint}" if provider.key_hint else "...",
        "base_url": provider.base_url,
        "access_key": None,
        "region": provider.region,
        "api_version": provider.api_version,
        "organization_id": provider.organization_id,
        "updated_at": iso(provider.updated_at),
    }


def batch_json(batch: Batch) -> dict[str, Any]:
    """Letta's BatchJob."""
    return {
        "id": batch.id,
        "status": batch.status,
        "job_type": "batch",
        "metadata": {"job_type": "batch_messages", "run_ids": batch.run_ids},
        "created_at": iso(batch.created_at),
        "updated_at": iso(batch.updated_at),
        "completed_at": iso(batch.cancelled_at or batch.completed_at)
        if batch.status != "running" else None,
        "stop_reason": None,
        "background": None,
        "agent_id": None,
        "callback_url": batch.callback_url,
        "callback_sent_at": None,
        "callback_status_code": None,
        "callback_error": None,
        "ttft_ns": None,
        "total_duration_ns": None,
        "user_id": batch.created_by_id,
        "created_by_id": batch.created_by_id,
        "last_updated_by_id": batch.created_by_id,
    }  # fmt: skip


def message_json(message: Message) -> dict[str, Any]:
    """Letta's Message (the stored form, not a LettaMessage)."""
    return message.model_dump(mode="json", exclude={"organization_id", "sequence_id"})


def response_json(
    made: list[Message], stop_reason: str | None, usage: dict[str, Any], req: LettaRequest
) -> dict[str, Any]:
    """Letta's LettaResponse for what a send produced, shown as the request asks."""
    shown = expand(made, use_assistant_message=req.use_assistant_message)
    if req.include_return_message_types:
        shown = [m for m in shown if m["message_type"] in req.include_return_message_types]
    return {
        "messages": shown,
        "stop_reason": {"message_type": "stop_reason", "stop_reason": stop_reason},
        "usage": usage,
    }


def usage_json(run: Run, usage: Usage | None = None) -> dict[str, Any]:
    usage = usage or run.usage
    return {
        "message_type": "usage_statistics",
        "completion_tokens": usage.completion_tokens,
        "prompt_tokens": usage.prompt_tokens,
        "total_tokens": usage.total_tokens,
        "step_count": usage.step_count,
        "run_ids": None,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def step_json(step: Step) -> dict[str, Any]:
    """Letta's Step (which admits no other keys): a failed step's error as error_type/data."""
    data = step.model_dump(
        mode="json",
        exclude={"organization_id", "step_index", "kind", "error", "started_at", "completed_at",
                 "created_at", "llm_request_ns", "tool_execution_ns"},
    )  # fmt: skip
    error = step.error or {}
    return data | {
        "messages": [],
        "trace_id": None,
        "error_type": error.get("type"),
        "error_data": error or None,
    }


def _ns(at: datetime | None) -> int | None:
    return None if at is None else int(at.timestamp() * 1e9)


def step_metrics_json(step: Step) -> dict[str, Any]:
    """Letta's StepMetrics from what the step recorded (the delivery that committed it)."""
    started, ended = _ns(step.started_at), _ns(step.completed_at)
    return {
        "id": step.id,
        "organization_id": step.organization_id,
        "run_id": step.run_id,
        "agent_id": step.agent_id,
        "step_start_ns": started,
        "llm_request_start_ns": started if step.llm_request_ns is not None else None,
        "llm_request_ns": step.llm_request_ns,
        "tool_execution_ns": step.tool_execution_ns,
        "step_ns": ended - started if started is not None and ended is not None else None,
    }


def run_metrics_json(run: Run, num_steps: int, tools_used: list[str]) -> dict[str, Any]:
    return {
        "id": run.id,
        "organization_id": run.organization_id,
        "agent_id": run.agent_id,
        "run_start_ns": _ns(run.created_at),
        "run_ns": run.total_duration_ns,
        "num_steps": num_steps,
        "tools_used": tools_used,
    }


def trace_json(step: Step, trace: dict[str, Any]) -> dict[str, Any]:
    """Letta's ProviderTrace; the response is the model's answer as Cairn read it."""
    return {
        "id": f"provider_trace-{step.id.removeprefix('step-')}",
        "step_id": step.id,
        "request_json": trace["request_json"],
        "response_json": trace["response_json"],
        "created_at": iso(trace["created_at"]),
    }


def passage_json(passage: Passage) -> dict[str, Any]:
    data = passage.model_dump(mode="json", exclude={"organization_id"})
    return data | {
        "is_deleted": False,
        "file_id": None,
        "file_name": None,
        "source_id": None,
        "created_at": iso(passage.created_at),
    }


def group_json(group: Group) -> dict[str, Any]:
    # Letta's Group admits no timestamps (additionalProperties false).
    return group.model_dump(mode="json", exclude={"organization_id", "created_at", "updated_at"})


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


def search_result_json(passage: Passage, timezone: str) -> dict[str, Any]:
    """Letta's ArchivalMemorySearchResult: ISO-8601 in the agent's timezone, no relevance."""
    when = passage.created_at.astimezone(ZoneInfo(timezone)).isoformat()
    return {"timestamp": when, "content": passage.text, "tags": passage.tags}


def archive_json(archive: Archive) -> dict[str, Any]:
    data = archive.model_dump(mode="json")
    return data | {
        "vector_db_provider": "native",
        "created_by_id": None,
        "last_updated_by_id": None,
        "created_at": iso(archive.created_at),
        "updated_at": iso(archive.updated_at),
    }


def tool_return_json(name: str, result: SandboxResult) -> dict[str, Any]:
    """Letta's ToolReturnMessage for a tool run from source (`POST /v1/tools/run`). Letta
    answers with the id and call id "null" (no message is stored); Cairn gives the answer a
    message id of its own, still stored nowhere, and keeps Letta's "null" call id."""
    status = "success" if result.success else "error"
    outcome = {"tool_return": result.value, "status": status, "tool_call_id": "null",
               "stdout": result.stdout, "stderr": result.stderr}  # fmt: skip
    return {
        "id": new_id("message"), "date": iso(datetime.now(UTC)), "name": name,
        "message_type": "tool_return_message", "otid": None, "sender_id": None,
        "step_id": None, "is_err": None, "seq_id": None, "run_id": None,
        **outcome, "tool_returns": [outcome],
    }  # fmt: skip


def execution_json(result: SandboxResult) -> dict[str, Any]:
    """Letta's ToolExecutionResult."""
    return {
        "status": "success" if result.success else "error",
        "func_return": result.value,
        "agent_state": None,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "sandbox_config_fingerprint": None,
    }
