"""Pydantic models of Cairn's state, with the validation the database also enforces."""

from cairn.domain.agents import Agent, AgentType, StopReason
from cairn.domain.blocks import Block, BlockHistoryEntry, BlockLimitError
from cairn.domain.configs import CompactionSettings, EmbeddingConfig, LLMConfig
from cairn.domain.groups import Group
from cairn.domain.ids import new_id
from cairn.domain.messages import Message, TextContent, ToolCall, ToolReturn
from cairn.domain.passages import Archive, Passage
from cairn.domain.runs import JournalEntry, OutboxCommand, Run, Step, Usage
from cairn.domain.tenancy import ApiKey, Organization, User
from cairn.domain.tool_rules import ToolRule
from cairn.domain.tools import Tool

__all__ = [
    "Agent",
    "AgentType",
    "ApiKey",
    "Archive",
    "Block",
    "BlockHistoryEntry",
    "BlockLimitError",
    "CompactionSettings",
    "EmbeddingConfig",
    "Group",
    "JournalEntry",
    "LLMConfig",
    "Message",
    "Organization",
    "OutboxCommand",
    "Passage",
    "Run",
    "Step",
    "StopReason",
    "TextContent",
    "Tool",
    "ToolCall",
    "ToolReturn",
    "ToolRule",
    "Usage",
    "User",
    "new_id",
]
