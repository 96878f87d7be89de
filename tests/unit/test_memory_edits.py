"""Memory-editing operations (reference §5): behaviour, every guard, and properties."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from cairn.domain import Block
from cairn.domain.ids import new_id
from cairn.memory.edits import EDITED, CoreMemory, MemoryEditError, label_of

ORG = new_id("org")


def memory(
    value: str = "Name: Ada\nLikes: tea", *, limit: int = 200, **extra: object
) -> CoreMemory:
    human = Block(organization_id=ORG, label="human", value=value, limit=limit, **extra)  # type: ignore[arg-type]
    persona = Block(organization_id=ORG, label="persona", value="I am Sam.", read_only=True)
    return CoreMemory.of(ORG, [human, persona])


def value(mem: CoreMemory, label: str = "human") -> str:
    return mem.blocks[label].value


def test_append_joins_with_a_newline_and_returns_the_edited_block() -> None:
    mem = memory()
    result = mem.core_memory_append("human", "Lives: Paris ☕")
    assert value(mem) == "Name: Ada\nLikes: tea\nLives: Paris ☕"
    assert result.message == EDITED.format(label="human")
    assert result.blocks[0].value == value(mem)
    assert mem.changes()[1] == [mem.blocks["human"]]


def test_append_to_an_empty_block_adds_no_leading_newline() -> None:
    mem = memory("")
    mem.core_memory_append("human", "first")
    assert value(mem) == "first"


def test_core_memory_replace_replaces_every_occurrence() -> None:
    mem = memory("tea, tea")
    mem.core_memory_replace("human", "tea", "coffee")
    assert value(mem) == "coffee, coffee"
    with pytest.raises(MemoryEditError, match="was not found"):
        mem.core_memory_replace("human", "juice", "x")


def test_memory_replace_needs_exactly_one_match_and_lists_the_lines() -> None:
    mem = memory("a: tea\nb: coffee\nc: tea")
    with pytest.raises(MemoryEditError) as err:
        mem.memory_replace("human", "tea", "milk")
    assert "on lines [1, 3]" in str(err.value) and "2 times" in str(err.value)
    with pytest.raises(MemoryEditError, match="does not appear verbatim"):
        mem.memory_replace("human", "juice", "milk")
    mem.memory_replace("human", "b: coffee", "b: cocoa")
    assert value(mem) == "a: tea\nb: cocoa\nc: tea"


def test_overlapping_occurrences_are_ambiguous() -> None:
    with pytest.raises(MemoryEditError, match="2 times"):
        memory("aaa").memory_replace("human", "aa", "b")


def test_tabs_are_expanded_before_matching() -> None:
    mem = memory("key:\tvalue")
    mem.memory_replace("human", "key:    value", "key: other")
    assert value(mem) == "key: other"
    mem = memory("key:\tvalue")
    mem.memory_replace("human", "key:\tvalue", "x\ty")
    assert value(mem) == "x\ty".expandtabs()


def test_read_only_blocks_are_never_edited() -> None:
    mem = memory()
    operations = [
        lambda: mem.core_memory_append("persona", "x"),
        lambda: mem.core_memory_replace("persona", "Sam", "Bob"),
        lambda: mem.memory_replace("persona", "Sam", "Bob"),
        lambda: mem.memory_insert("persona", "x"),
        lambda: mem.memory_rethink("persona", "x"),
        lambda: mem.memory_delete("/memories/persona"),
        lambda: mem.memory_rename("/memories/persona", "/memories/p2"),
        lambda: mem.memory_describe("/memories/persona", "new"),
    ]
    for operation in operations:
        with pytest.raises(MemoryEditError, match="read-only"):
            operation()
    assert value(mem, "persona") == "I am Sam." and mem.changes() == ([], [], [])


def test_over_the_limit_error_states_both_numbers_and_changes_nothing() -> None:
    mem = memory("12345", limit=10)
    with pytest.raises(MemoryEditError) as err:
        mem.core_memory_append("human", "67890")
    assert "11 characters" in str(err.value) and "limit of 10 characters" in str(err.value)
    assert value(mem) == "12345" and mem.changes() == ([], [], [])


@pytest.mark.parametrize("text", ["1→ Name: Ada", "x\n2→ Likes: tea"])
def test_line_number_prefixes_are_rejected(text: str) -> None:
    mem = memory()
    with pytest.raises(MemoryEditError, match="line-number prefixes"):
        mem.memory_replace("human", text, "y")
    with pytest.raises(MemoryEditError, match="line-number prefixes"):
        mem.memory_insert("human", text)
    # an arrow inside text is fine; only the display prefix is refused
    mem.memory_insert("human", "a → b")
    assert value(mem).endswith("a → b")


def test_insert_at_top_middle_end_and_out_of_range() -> None:
    mem = memory("one\ntwo")
    mem.memory_insert("human", "zero", 0)
    mem.memory_insert("human", "one and a half", 2)
    mem.memory_insert("human", "three")
    assert value(mem) == "zero\none\none and a half\ntwo\nthree"
    with pytest.raises(MemoryEditError, match=r"between 0 .* and 5"):
        mem.memory_insert("human", "x", 6)


def test_rethink_rewrites_or_creates_and_finish_edits_changes_nothing() -> None:
    mem = memory()
    mem.memory_rethink("human", "All new.")
    mem.memory_rethink("plans", "Visit Kyoto.")
    assert value(mem) == "All new." and value(mem, "plans") == "Visit Kyoto."
    created, updated, _ = mem.changes()
    assert [b.label for b in created] == ["plans"] and [b.label for b in updated] == ["human"]
    assert mem.memory_finish_edits().blocks == ()


def test_unknown_label_error_lists_the_available_ones() -> None:
    with pytest.raises(MemoryEditError, match="available labels: human, persona"):
        memory().memory_replace("humans", "a", "b")


def test_omni_create_str_replace_insert_rename_describe_delete() -> None:
    mem = memory()
    mem.memory_create("/memories/projects/cairn", "What we build", "Serverless Letta.")
    with pytest.raises(MemoryEditError, match="already exists"):
        mem.memory_create("/memories/projects/cairn", None, "x")
    mem.memory_str_replace("/memories/projects/cairn", "Serverless", "AWS serverless")
    mem.memory_insert_at("/memories/projects/cairn", 0, "Cairn:")
    mem.memory_rename("/memories/projects/cairn", "/memories/work")
    mem.memory_describe("/memories/work", "Work notes")
    block = mem.blocks["work"]
    assert block.value == "Cairn:\nAWS serverless Letta." and block.description == "Work notes"
    assert "projects/cairn" not in mem.blocks
    created, _, _ = mem.changes()
    assert [b.label for b in created] == ["work"]
    mem.memory_delete("/memories/human")
    assert [b.label for b in mem.changes()[2]] == ["human"]
    with pytest.raises(MemoryEditError, match="not a valid memory label"):
        mem.memory_rename("/memories/work", "/memories/has space")


def test_paths_and_bare_labels_name_the_same_block() -> None:
    assert label_of("/memories/human") == label_of("human") == "human"
    with pytest.raises(MemoryEditError, match="names no memory block"):
        label_of("/memories/")


# -- properties ---------------------------------------------------------------------------

texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r→"),
    max_size=60,
)
lines_text = st.lists(texts.filter(lambda t: "\n" not in t), max_size=6).map("\n".join)


@given(start=texts, added=texts, limit=st.integers(1, 120))
def test_a_value_never_exceeds_its_limit(start: str, added: str, limit: int) -> None:
    assume(len(start) <= limit)
    mem = memory(start, limit=limit)
    for operation in (
        lambda: mem.core_memory_append("human", added),
        lambda: mem.memory_insert("human", added),
        lambda: mem.memory_rethink("human", added),
    ):
        with contextlib.suppress(MemoryEditError):
            operation()
        assert len(value(mem)) <= limit


@given(added=texts, old=texts)
def test_read_only_blocks_never_change(added: str, old: str) -> None:
    mem = memory()
    for operation in (
        lambda: mem.core_memory_append("persona", added),
        lambda: mem.memory_replace("persona", old, added),
        lambda: mem.memory_insert("persona", added, 0),
        lambda: mem.memory_rethink("persona", added),
    ):
        with pytest.raises(MemoryEditError):
            operation()
    assert value(mem, "persona") == "I am Sam."


@given(start=lines_text, inserted=texts.filter(lambda t: t != ""), data=st.data())
def test_insert_then_matching_replace_restores_the_value(
    start: str, inserted: str, data: st.DataObject
) -> None:
    expanded, inserted_x = start.expandtabs(), inserted.expandtabs()
    lines = expanded.split("\n") if expanded else []
    at = data.draw(st.integers(0, len(lines)))
    mem = memory(start, limit=1000)
    mem.memory_insert("human", inserted, at)
    # The inserted text sits on its own lines; removing it with its line break restores.
    if not lines:
        old = inserted_x
    elif at < len(lines):
        old = inserted_x + "\n"
    else:
        old = "\n" + inserted_x
    assume(_occurrences(value(mem), old) == 1)
    mem.memory_replace("human", old, "")
    assert value(mem) == expanded


@given(text=texts)
def test_unicode_and_tabs_survive_a_round_trip(text: str) -> None:
    assume(text and "\n" not in text)
    mem = memory("", limit=1000)
    mem.memory_insert("human", text)
    assert value(mem) == text.expandtabs()
    mem.memory_rethink("human", text)
    assert value(mem) == text
    mem.core_memory_append("human", text)
    assert value(mem) == f"{text}\n{text}"


def _occurrences(haystack: str, needle: str) -> int:
    count, at = 0, haystack.find(needle)
    while at >= 0:
        count, at = count + 1, haystack.find(needle, at + 1)
    return count


# -- memory_apply_patch (Letta 0.16.1's, by content and context) ---------------------------


def test_a_patch_replaces_by_content_with_context_to_tell_places_apart() -> None:
    mem = memory("Persona:\nFriendly and curious\nLikes: Hiking\nFriendly and curious")
    patch = (
        "@@\n Persona:\n-Friendly and curious\n+Friendly, curious, and precise\n Likes: Hiking\n"
    )
    result = mem.memory_apply_patch("human", patch)
    assert value(mem) == (
        "Persona:\nFriendly, curious, and precise\nLikes: Hiking\nFriendly and curious"
    )
    assert result.message == EDITED.format(label="human")


def test_hunks_apply_in_turn_and_an_insertion_without_context_goes_at_the_end() -> None:
    mem = memory("a\nb\nc")
    patch = "--- a/human\n+++ b/human\n@@ -1 +1 @@\n-a\n+A\n@@\n b\n+b2\n c\n@@\n+tail"
    mem.memory_apply_patch("human", patch)
    assert value(mem) == "A\nb\nb2\nc\ntail"


def test_a_blank_patch_line_is_an_empty_context_line() -> None:
    mem = memory("one\n\ntwo")
    mem.memory_apply_patch("human", "@@\n one\n\n-two\n+three")
    assert value(mem) == "one\n\nthree"


@pytest.mark.parametrize(
    ("block", "patch", "says"),
    [
        ("x\ny", "@@\n-z\n+w", "expected hunk context not found"),
        ("x\nx", "@@\n-x\n+y", "matched multiple places"),
        ("x", "just words", "No applicable hunks"),
        ("x", "@@\n 1→ x\n+y", "line-number"),
    ],
)
def test_a_patch_that_does_not_apply_cleanly_changes_nothing(
    block: str, patch: str, says: str
) -> None:
    mem = memory(block)
    with pytest.raises(MemoryEditError, match=says):
        mem.memory_apply_patch("human", patch)
    assert value(mem) == block and mem.changes() == ([], [], [])


def test_a_patch_to_a_read_only_block_is_refused() -> None:
    with pytest.raises(MemoryEditError):
        memory().memory_apply_patch("persona", "@@\n-I am Sam.\n+I am Max.")
