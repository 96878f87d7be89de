"""The memory-editing operations of Letta's memory tools, with every guard.

`CoreMemory` holds an agent's blocks by label for the length of one step. Each operation
checks everything first and changes nothing when a check fails, so a failed tool call
leaves memory exactly as it was. Operations return the blocks they wrote; `changes()` lists
what the step must persist in its checkpoint (with the version each block was read at, for
the optimistic check). Failures raise `MemoryEditError`, whose message is written for the
model: it names what was wrong and what to send instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from cairn.domain.blocks import Block
from cairn.domain.constants import (
    BLOCK_LABEL_PATTERN,
    CORE_MEMORY_BLOCK_CHAR_LIMIT,
    MAX_BLOCK_LABEL_LENGTH,
)
from cairn.memory.render import LINE_NUMBER_WARNING

MEMORY_PATH_PREFIX = "/memories/"
EDITED = (
    "The core memory block with label `{label}` has been edited. Review the changes and make "
    "sure they are as expected (correct indentation, no duplicate lines, etc). Edit the memory "
    "block again if necessary."
)
# The `N→ ` prefixes exist only in the rendered prompt; text that carries them was copied
# from the display and would corrupt the block if written back.
_LINE_NUMBER_PREFIX = re.compile(r"(?:^|\n)\d+→ ")
# In a patch, where lines start with their " ", "-" or "+" (Letta's check for patches).
_PATCH_LINE_NUMBER = re.compile(r"^[ \t]*\d+→[ \t]*", re.MULTILINE)


class MemoryEditError(ValueError):
    """An edit the model asked for that cannot be done; the message is its tool result."""


@dataclass(frozen=True)
class EditResult:
    message: str
    blocks: tuple[Block, ...] = ()


@dataclass
class CoreMemory:
    """An agent's blocks by label, and the edits made to them during one step."""

    organization_id: str
    blocks: dict[str, Block] = field(default_factory=dict)
    created: set[str] = field(default_factory=set)
    updated: set[str] = field(default_factory=set)
    deleted: dict[str, Block] = field(default_factory=dict)

    @classmethod
    def of(cls, organization_id: str, blocks: Iterable[Block]) -> CoreMemory:
        return cls(organization_id, {b.label: b for b in blocks})

    def changes(self) -> tuple[list[Block], list[Block], list[Block]]:
        """(created, updated, deleted) blocks, as the checkpoint writes them."""
        created = [self.blocks[label] for label in sorted(self.created)]
        updated = [self.blocks[label] for label in sorted(self.updated - self.created)]
        return created, updated, list(self.deleted.values())

    # -- the guards -------------------------------------------------------------------

    def _writable(self, label: str) -> Block:
        block = self.blocks.get(label)
        if block is None:
            labels = ", ".join(sorted(self.blocks)) or "none"
            raise MemoryEditError(
                f"No memory block with label `{label}` exists (available labels: {labels})."
            )
        if block.read_only:
            raise MemoryEditError(f"The memory block `{label}` is read-only and cannot be edited.")
        return block

    def _write(self, block: Block, value: str) -> Block:
        if len(value) > block.limit:
            raise MemoryEditError(
                f"Edit failed: the new value of `{block.label}` would be {len(value)} "
                f"characters, over the block's limit of {block.limit} characters. Shorten the "
                "content or remove something else first."
            )
        new = block.model_copy(update={"value": value})
        self.blocks[block.label] = new
        self.updated.add(block.label)
        return new

    # -- Letta's original two ------------------------------------------------------------

    def core_memory_append(self, label: str, content: str) -> EditResult:
        block = self._writable(label)
        _reject_line_numbers(content=content)
        new = self._write(block, f"{block.value}\n{content}" if block.value else content)
        return EditResult(EDITED.format(label=label), (new,))

    def core_memory_replace(self, label: str, old_content: str, new_content: str) -> EditResult:
        """Replaces every occurrence, as Letta does; `memory_replace` is the exact one."""
        block = self._writable(label)
        _reject_line_numbers(old_content=old_content, new_content=new_content)
        if not old_content:
            raise MemoryEditError("`old_content` must not be empty.")
        if old_content not in block.value:
            raise MemoryEditError(
                f"Old content `{old_content}` was not found in memory block `{label}`."
            )
        new = self._write(block, block.value.replace(old_content, new_content))
        return EditResult(EDITED.format(label=label), (new,))

    # -- the v2 editing tools ------------------------------------------------------------

    def memory_replace(self, label: str, old_str: str, new_str: str) -> EditResult:
        block = self._writable(label)
        _reject_line_numbers(old_str=old_str, new_str=new_str)
        value, old_str, new_str = (
            block.value.expandtabs(),
            old_str.expandtabs(),
            new_str.expandtabs(),
        )
        _require_single_match(value, old_str, label)
        new = self._write(block, value.replace(old_str, new_str, 1))
        return EditResult(EDITED.format(label=label), (new,))

    def memory_insert(self, label: str, new_str: str, insert_line: int = -1) -> EditResult:
        block = self._writable(label)
        _reject_line_numbers(new_str=new_str)
        value, new_str = block.value.expandtabs(), new_str.expandtabs()
        # An empty block has no lines (Letta counts one empty line and leaves a stray "\n").
        lines = value.split("\n") if value else []
        if insert_line == -1:
            insert_line = len(lines)
        if not 0 <= insert_line <= len(lines):
            raise MemoryEditError(
                f"Invalid `insert_line` {insert_line}: use a line between 0 (the top) and "
                f"{len(lines)} (the end) of `{label}`, or -1 for the end."
            )
        new_value = "\n".join(lines[:insert_line] + new_str.split("\n") + lines[insert_line:])
        new = self._write(block, new_value)
        return EditResult(EDITED.format(label=label), (new,))

    def memory_apply_patch(self, label: str, patch: str) -> EditResult:
        """A simplified unified diff applied by its content, not line numbers (Letta
        0.16.1's memory_apply_patch): hunks split at `@@` lines, each of context (" "),
        removed ("-") and added ("+") lines, applied one after another; a hunk whose
        context and removed lines are not found exactly once is refused, and so the patch."""
        block = self._writable(label)
        _reject_line_numbers(patch=patch)
        if _PATCH_LINE_NUMBER.search(patch):  # a context line is " " + the line: `  3→ x`
            raise _line_numbers_in("patch")
        lines = block.value.expandtabs().split("\n")
        hunks = _hunks(patch.expandtabs())
        if not hunks:
            raise MemoryEditError(
                "No applicable hunks found in patch. Ensure lines start with ' ', '-', or '+'."
            )
        for hunk in hunks:
            expected = [ln[1:] for ln in hunk if ln[0] in " -"]
            replacement = [ln[1:] for ln in hunk if ln[0] in " +"]
            if not expected:  # an insertion without context goes at the end
                lines += replacement
                continue
            width = len(expected)
            found = [i for i in range(len(lines) - width + 1) if lines[i : i + width] == expected]
            if not found:
                sample = "\n".join(expected[:4])
                raise MemoryEditError(
                    "Failed to apply patch: expected hunk context not found in the memory "
                    "block. Verify the target lines exist and try providing more context. "
                    f"Expected start:\n{sample}"
                )
            if len(found) > 1:
                raise MemoryEditError(
                    "Failed to apply patch: hunk context matched multiple places in the memory "
                    "block. Please add more unique surrounding context to disambiguate."
                )
            lines[found[0] : found[0] + width] = replacement
        new = self._write(block, "\n".join(lines))
        return EditResult(EDITED.format(label=label), (new,))

    def memory_rethink(self, label: str, new_memory: str) -> EditResult:
        """Rewrites the whole block, creating it when the label is new."""
        _reject_line_numbers(new_memory=new_memory)
        if label not in self.blocks:
            new = self._create(label, new_memory, description=None)
        else:
            new = self._write(self._writable(label), new_memory)
        return EditResult(EDITED.format(label=label), (new,))

    def memory_finish_edits(self) -> EditResult:
        return EditResult("None")

    # -- the omni `memory` tool ------------------------------------------------------------

    def memory_create(
        self, path: str, description: str | None, file_text: str | None
    ) -> EditResult:
        label = label_of(path)
        _reject_line_numbers(file_text=file_text or "")
        if label in self.blocks:
            raise MemoryEditError(
                f"A memory block `{label}` already exists: edit it with `str_replace` or "
                "`insert`, or choose another path."
            )
        new = self._create(label, file_text or "", description=description)
        return EditResult(f"Created the memory block `{label}`.", (new,))

    def memory_str_replace(self, path: str, old_str: str, new_str: str) -> EditResult:
        return self.memory_replace(label_of(path), old_str, new_str)

    def memory_insert_at(self, path: str, insert_line: int, insert_text: str) -> EditResult:
        return self.memory_insert(label_of(path), insert_text, insert_line)

    def memory_delete(self, path: str) -> EditResult:
        label = label_of(path)
        block = self._writable(label)
        del self.blocks[label]
        self.updated.discard(label)
        if label in self.created:
            self.created.discard(label)
        else:
            self.deleted[label] = block
        return EditResult(f"Deleted the memory block `{label}`.")

    def memory_rename(self, old_path: str, new_path: str) -> EditResult:
        old, new_label = label_of(old_path), label_of(new_path)
        block = self._writable(old)
        if new_label in self.blocks:
            raise MemoryEditError(f"A memory block `{new_label}` already exists.")
        _check_label(new_label)
        renamed = block.model_copy(update={"label": new_label})
        del self.blocks[old]
        self.blocks[new_label] = renamed
        for marks in (self.created, self.updated):
            if old in marks:
                marks.discard(old)
                marks.add(new_label)
        self.updated.add(new_label)
        return EditResult(f"Renamed the memory block `{old}` to `{new_label}`.", (renamed,))

    def memory_describe(self, path: str, description: str) -> EditResult:
        label = label_of(path)
        block = self._writable(label)
        new = block.model_copy(update={"description": description})
        self.blocks[label] = new
        self.updated.add(label)
        return EditResult(f"Updated the description of the memory block `{label}`.", (new,))

    def _create(self, label: str, value: str, *, description: str | None) -> Block:
        _check_label(label)
        limit = CORE_MEMORY_BLOCK_CHAR_LIMIT
        if len(value) > limit:
            raise MemoryEditError(
                f"Edit failed: the new block `{label}` would be {len(value)} characters, over "
                f"the limit of {limit} characters."
            )
        block = Block(
            organization_id=self.organization_id,
            label=label,
            value=value,
            description=description,
            limit=limit,
        )
        self.blocks[label] = block
        self.created.add(label)
        return block


def label_of(path: str) -> str:
    """`/memories/<label>` (or a bare label) to the label."""
    path = path.strip()
    if path.startswith(MEMORY_PATH_PREFIX):
        path = path[len(MEMORY_PATH_PREFIX) :]
    label = path.strip("/")
    if not label:
        raise MemoryEditError(
            f"`{path}` names no memory block: use a path like `/memories/<label>`."
        )
    return label


def _check_label(label: str) -> None:
    if len(label) > MAX_BLOCK_LABEL_LENGTH or not re.fullmatch(BLOCK_LABEL_PATTERN, label):
        raise MemoryEditError(
            f"`{label}` is not a valid memory label: use letters, digits, `_`, `-`, `.` or `/`, "
            f"at most {MAX_BLOCK_LABEL_LENGTH} characters, starting with a letter, digit or `_`."
        )


def _hunks(patch: str) -> list[list[str]]:
    """A patch's hunks: its " ", "-" and "+" lines between `@@` lines; a blank line is an
    empty context line, diff headers (`---`, `+++`, `*** `) and anything else are skipped."""
    hunks: list[list[str]] = [[]]
    for line in patch.splitlines():
        if line.startswith(("*** ", "---", "+++")):
            continue
        if line.startswith("@@"):
            hunks.append([])
        elif line[:1] in (" ", "-", "+"):
            hunks[-1].append(line)
        elif not line.strip():
            hunks[-1].append(" ")
    return [h for h in hunks if h]


def _reject_line_numbers(**texts: str) -> None:
    for name, text in texts.items():
        if _LINE_NUMBER_PREFIX.search(text) or LINE_NUMBER_WARNING in text:
            raise _line_numbers_in(name)


def _line_numbers_in(name: str) -> MemoryEditError:
    return MemoryEditError(
        f"`{name}` contains line-number prefixes such as `1→ `. They are only shown to help "
        "you find lines; send the text without them."
    )


def _require_single_match(value: str, old_str: str, label: str) -> None:
    if not old_str:
        raise MemoryEditError("`old_str` must not be empty.")
    # Overlapping occurrences count too: "aa" in "aaa" is ambiguous.
    starts, at = [], value.find(old_str)
    while at >= 0:
        starts.append(at)
        at = value.find(old_str, at + 1)
    if not starts:
        raise MemoryEditError(
            f"No replacement was made: `old_str` `{old_str}` does not appear verbatim in the "
            f"memory block `{label}`."
        )
    if len(starts) > 1:
        lines = [value.count("\n", 0, start) + 1 for start in starts]
        raise MemoryEditError(
            f"No replacement was made: `old_str` `{old_str}` occurs {len(starts)} times in "
            f"`{label}`, on lines {lines}. Include more surrounding text so it occurs once."
        )
