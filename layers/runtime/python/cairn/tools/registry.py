"""The built-in tools, their per-tool settings, and the tool set each agent type starts with."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from cairn.domain.constants import TOOL_RETURN_CHAR_LIMIT
from cairn.domain.tool_rules import ContinueToolRule, TerminalToolRule, ToolRule
from cairn.domain.tools import Tool, ToolType
from cairn.tools.builtin import agents, core, files, memory, schedule, voice
from cairn.tools.builtin.letta_words import letta_schemas
from cairn.tools.context import ToolContext
from cairn.tools.schema import args_model, function_schema, validate_arguments


@dataclass(frozen=True)
class ToolSpec:
    """A tool the runtime can call: its schema, its argument model and its settings."""

    function: Callable[..., Any]
    tool_type: ToolType
    arguments: type[BaseModel] = field(repr=False)
    json_schema: dict[str, Any] = field(repr=False)
    return_char_limit: int = TOOL_RETURN_CHAR_LIMIT
    enable_parallel_execution: bool = False
    default_requires_approval: bool = False
    # Its result is journaled before the step goes on, so a step delivered again reads it
    # instead of calling again (a tool whose effect is not in the checkpoint).
    journaled: bool = False

    @property
    def name(self) -> str:
        return str(self.json_schema["name"])

    def call(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        """Validate the model's arguments, then run; argument errors are `ToolArgumentError`."""
        return self.function(ctx, **validate_arguments(self.arguments, self.name, args))

    def as_tool(self, organization_id: str) -> Tool:
        """The row that lists this built-in among an organisation's tools."""
        return Tool(
            organization_id=organization_id,
            name=self.name,
            description=self.json_schema["description"],
            tool_type=self.tool_type,
            source_type="python",
            json_schema=self.json_schema,
            return_char_limit=self.return_char_limit,
            enable_parallel_execution=self.enable_parallel_execution,
            default_requires_approval=self.default_requires_approval,
        )


def tool_spec(fn: Callable[..., Any], tool_type: ToolType, **settings: Any) -> ToolSpec:
    """The spec of a built-in: Letta's schema of it, word for word (`letta_words.py`), or
    for one of Cairn's own its signature's and docstring's."""
    model = args_model(fn)
    letta = letta_schemas().get(fn.__name__)
    # Letta's own schema where it has the tool (the arguments are the same: a test holds it).
    schema = copy.deepcopy(letta["json_schema"]) if letta else function_schema(fn, model)
    return ToolSpec(fn, tool_type, model, schema, **settings)


# Searches only read, so several in one step may run at once; edits stay in call order.
class _Builtins(Mapping[str, ToolSpec]):
    """The built-in tools by name, made on first use: each one's argument model and JSON
    schema take ~2 ms to build, and most API requests never touch a tool (cold start)."""

    @functools.cached_property
    def _specs(self) -> dict[str, ToolSpec]:
        made = (
            tool_spec(core.send_message, "letta_core"),
            tool_spec(core.conversation_search, "letta_core", enable_parallel_execution=True),
            tool_spec(core.archival_memory_insert, "letta_core"),
            tool_spec(core.archival_memory_search, "letta_core", enable_parallel_execution=True),
            tool_spec(core.fetch_webpage, "letta_builtin", enable_parallel_execution=True),
            tool_spec(core.web_search, "letta_builtin", enable_parallel_execution=True),
            tool_spec(core.run_code, "letta_builtin"),
            tool_spec(core.run_code_with_tools, "letta_builtin"),
            tool_spec(memory.core_memory_append, "letta_memory_core"),
            tool_spec(memory.core_memory_replace, "letta_memory_core"),
            tool_spec(memory.memory, "letta_memory_core"),
            tool_spec(memory.memory_apply_patch, "letta_memory_core"),
            tool_spec(memory.memory_replace, "letta_sleeptime_core"),
            tool_spec(memory.memory_insert, "letta_sleeptime_core"),
            tool_spec(memory.memory_rethink, "letta_sleeptime_core"),
            tool_spec(memory.memory_finish_edits, "letta_sleeptime_core"),
            tool_spec(agents.send_message_to_agent_async, "letta_multi_agent_core"),
            tool_spec(
                agents.send_message_to_agent_and_wait_for_reply,
                "letta_multi_agent_core",
                journaled=True,
            ),
            tool_spec(
                agents.send_message_to_agents_matching_tags,
                "letta_multi_agent_core",
                journaled=True,
            ),
            tool_spec(voice.rethink_user_memory, "letta_voice_sleeptime_core"),
            tool_spec(voice.finish_rethinking_memory, "letta_voice_sleeptime_core"),
            tool_spec(voice.store_memories, "letta_voice_sleeptime_core"),
            tool_spec(voice.search_memory, "letta_voice_sleeptime_core"),
            tool_spec(files.open_files, "letta_files_core"),
            tool_spec(files.grep_files, "letta_files_core", enable_parallel_execution=True),
            tool_spec(
                files.semantic_search_files, "letta_files_core", enable_parallel_execution=True
            ),
            tool_spec(schedule.schedule_message, "letta_builtin", journaled=True),
        )
        return {spec.name: spec for spec in made}

    def __getitem__(self, name: str) -> ToolSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


BUILTIN_TOOLS: Mapping[str, ToolSpec] = _Builtins()

BASE_TOOLS = (
    "send_message",
    "conversation_search",
    "archival_memory_insert",
    "archival_memory_search",
)
MEMORY_TOOLS = ("core_memory_append", "core_memory_replace", "memory")
SLEEPTIME_TOOLS = ("memory_replace", "memory_insert", "memory_rethink", "memory_finish_edits")
# What a 0.16.1 server attaches by default, seen on the wire: the v1 loop
# edits memory with the line-based tools and answers in plain text; the v2 loop adds
# send_message. Neither gets the archival or core_memory_* tools unless asked.
V1_TOOLS = ("conversation_search", "memory_insert", "memory_replace")
V2_TOOLS = ("send_message", *V1_TOOLS)
# A chat agent with sleeptime leaves memory upkeep (and archival inserts) to its helpers.
SLEEPTIME_CHAT_TOOLS = ("send_message", "conversation_search", "archival_memory_search")
# What an agent gets when a folder is attached to it, as in Letta (and loses with its last).
FILE_TOOLS = ("open_files", "grep_files", "semantic_search_files")
TERMINAL_TOOLS = ("send_message", "send_message_to_agent_async", "memory_finish_edits")
_LEGACY_CHAT_AGENT_TYPES = frozenset({"memgpt_agent", "split_thread_agent", "voice_convo_agent"})


def default_tool_names(agent_type: str, *, enable_sleeptime: bool = False) -> tuple[str, ...]:
    """The built-ins an agent of this type gets when it is created with the base tools."""
    if agent_type in ("sleeptime_agent", "voice_sleeptime_agent"):
        return SLEEPTIME_TOOLS
    if enable_sleeptime and agent_type in ("letta_v1_agent", "memgpt_v2_agent"):
        return SLEEPTIME_CHAT_TOOLS
    if agent_type == "letta_v1_agent":
        return V1_TOOLS
    if agent_type == "memgpt_v2_agent":
        return V2_TOOLS
    if agent_type in _LEGACY_CHAT_AGENT_TYPES:
        return SLEEPTIME_CHAT_TOOLS if enable_sleeptime else BASE_TOOLS + MEMORY_TOOLS
    return ()  # react and workflow agents carry only the tools they are given


def default_rules_apply(agent_type: str, *, enable_sleeptime: bool) -> bool:
    """A plain letta_v1_agent starts with no rules in 0.16.1 (fixture agent A): its loop
    continues after any tool and ends on text, so terminal/continue rules add nothing."""
    return agent_type != "letta_v1_agent" or enable_sleeptime


def default_tool_rules(tool_names: Iterable[str]) -> list[ToolRule]:
    """Terminal rules for the tools that end a turn, continue rules for the other base tools."""
    rules: list[ToolRule] = []
    for name in tool_names:
        if name in TERMINAL_TOOLS:
            rules.append(TerminalToolRule(tool_name=name))
        elif name in BUILTIN_TOOLS:
            rules.append(ContinueToolRule(tool_name=name))
    return rules
