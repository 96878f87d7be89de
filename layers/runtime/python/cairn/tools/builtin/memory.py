"""The core-memory editing tools; each is a thin call into `cairn.memory.edits`."""

from __future__ import annotations

from typing import Literal

from cairn.memory.edits import MemoryEditError
from cairn.tools.context import ToolContext


def core_memory_append(ctx: ToolContext, label: str, content: str) -> str:
    """Append text to a memory block, on a new line.

    Args:
        label: The label of the block to edit, such as "human" or "persona".
        content: The text to add. All unicode, including emojis, is kept.
    """
    return ctx.memory.core_memory_append(label, content).message


def core_memory_replace(ctx: ToolContext, label: str, old_content: str, new_content: str) -> str:
    """Replace text in a memory block. To delete text, replace it with an empty string.

    Args:
        label: The label of the block to edit.
        old_content: The exact text to replace; every occurrence is replaced.
        new_content: The text to put in its place.
    """
    return ctx.memory.core_memory_replace(label, old_content, new_content).message


def memory_replace(ctx: ToolContext, label: str, old_str: str, new_str: str) -> str:
    """Replace one exact piece of text in a memory block.

    Do not include the line-number prefixes shown in the prompt.

    Args:
        label: The label of the block to edit.
        old_str: The text to replace; it must occur exactly once in the block.
        new_str: The text to put in its place; empty to delete old_str.
    """
    return ctx.memory.memory_replace(label, old_str, new_str).message


def memory_insert(ctx: ToolContext, label: str, new_str: str, insert_line: int = -1) -> str:
    """Insert text into a memory block at a given line.

    Args:
        label: The label of the block to edit.
        new_str: The text to insert, without line-number prefixes.
        insert_line: The line after which to insert: 0 for the top, -1 (default) for the end.
    """
    return ctx.memory.memory_insert(label, new_str, insert_line).message


def memory_apply_patch(ctx: ToolContext, label: str, patch: str) -> str:
    """Apply a unified-diff style patch to a memory block, anchored on content and context.

    Args:
        label: The memory block to edit, identified by its label.
        patch: The simplified unified-diff patch text composed of context (" "), deletion ("-"), and addition ("+") lines. Optional
            lines beginning with "@@" can be used to delimit hunks. Do not include visual line numbers or warning banners.
    """  # noqa: E501 (Letta's words and line break)
    return ctx.memory.memory_apply_patch(label, patch).message


def memory_rethink(ctx: ToolContext, label: str, new_memory: str) -> str:
    """Rewrite a whole memory block, for large reorganisations; creates it if it is new.

    Args:
        label: The label of the block to rewrite or create.
        new_memory: The complete new contents of the block.
    """
    return ctx.memory.memory_rethink(label, new_memory).message


def memory_finish_edits(ctx: ToolContext) -> str:
    """Call when you have finished editing memory. Ends your turn."""
    return ctx.memory.memory_finish_edits().message


def memory(
    ctx: ToolContext,
    command: Literal["create", "str_replace", "insert", "delete", "rename"],
    path: str | None = None,
    file_text: str | None = None,
    description: str | None = None,
    old_str: str | None = None,
    new_str: str | None = None,
    insert_line: int | None = None,
    insert_text: str | None = None,
    old_path: str | None = None,
    new_path: str | None = None,
) -> str:
    """Manage memory blocks as files under /memories/.

    Commands: "create" (path, description, file_text); "str_replace" (path, old_str,
    new_str); "insert" (path, insert_line, insert_text); "delete" (path); "rename"
    (old_path, new_path), or "rename" with path and description to change a description.

    Args:
        command: The operation: create, str_replace, insert, delete or rename.
        path: The block's path, like /memories/human.
        file_text: The initial contents, for create.
        description: What the block is for, for create or a description update.
        old_str: The exact text to replace (must occur once), for str_replace.
        new_str: The replacement text, for str_replace.
        insert_line: The line after which to insert (0 for the top, -1 for the end), for insert.
        insert_text: The text to insert, for insert.
        old_path: The current path, for rename.
        new_path: The new path, for rename.
    """
    mem = ctx.memory
    if command == "rename" and old_path is None and path is not None and description is not None:
        return mem.memory_describe(path, description).message
    if command == "rename":
        return mem.memory_rename(
            _needed("old_path", old_path), _needed("new_path", new_path)
        ).message
    target = _needed("path", path)
    if command == "create":
        return mem.memory_create(target, description, file_text).message
    if command == "str_replace":
        return mem.memory_str_replace(target, _needed("old_str", old_str), new_str or "").message
    if command == "insert":
        line = -1 if insert_line is None else insert_line
        return mem.memory_insert_at(target, line, _needed("insert_text", insert_text)).message
    return mem.memory_delete(target).message


def _needed(name: str, value: str | None) -> str:
    if value is None:
        raise MemoryEditError(f"This command needs the `{name}` argument.")
    return value
