"""The context window's entries: a change writes only the entries that change."""

from __future__ import annotations

from cairn.store.context import Changes, plan


def window(*ids: str) -> list[tuple[int, str]]:
    return list(enumerate(ids))


def apply(old: list[tuple[int, str]], changes: Changes) -> list[str]:
    kept = [e for e in old if e[0] not in changes.positions_removed]
    return [i for _, i in sorted(kept + changes.added)]


def test_a_step_appending_messages_writes_only_their_entries() -> None:
    old = window("sys", "u1", "a1")
    changes = plan(old, ["sys", "u1", "a1", "u2", "a2"])
    assert changes == Changes(removed=[], added=[(3, "u2"), (4, "a2")])


def test_a_compaction_deletes_the_evicted_and_slots_the_summary_in_their_place() -> None:
    old = window("sys", "u1", "a1", "u2", "a2", "u3")
    new = ["sys", "summary", "a2", "u3"]
    changes = plan(old, new)
    assert changes.positions_removed == [1, 2, 3] and changes.added == [(1, "summary")]
    assert apply(old, changes) == new


def test_nothing_changed_writes_nothing() -> None:
    old = window("sys", "u1")
    assert not plan(old, ["sys", "u1"])


def test_a_reordered_or_repeated_window_is_renumbered_and_still_right() -> None:
    old = window("sys", "u1", "a1")
    for new in (["sys", "a1", "u1"], ["sys", "u1", "u1"], ["x", "sys"], []):
        assert apply(old, plan(old, new)) == new


def test_messages_slot_in_where_a_gap_allows_and_renumber_where_none_does() -> None:
    old = [(0, "sys"), (10, "u1")]
    changes = plan(old, ["sys", "a", "b", "u1"])
    assert changes.removed == [] and changes.added == [(1, "a"), (2, "b")]
    tight = [(0, "sys"), (1, "u1")]
    assert apply(tight, plan(tight, ["sys", "a", "u1"])) == ["sys", "a", "u1"]
    before = plan([(5, "u1")], ["sys", "u1"])
    assert before == Changes(removed=[], added=[(4, "sys")])


def test_an_append_plans_as_the_general_plan_does() -> None:
    """The appending fast path (`_appended`) gives what the general plan gives."""
    import random

    from cairn.store import context

    rng = random.Random(7)
    taken = 0
    for _ in range(500):
        size = rng.randrange(0, 30)
        positions = sorted(rng.sample(range(200), size))
        ids = (
            rng.sample([f"m{k}" for k in range(60)], size)
            if rng.random() < 0.7
            else [f"m{rng.randrange(60)}" for _ in range(size)]
        )
        old = list(zip(positions, ids, strict=True))
        new = [*ids, *(f"m{rng.randrange(80)}" for _ in range(rng.randrange(0, 4)))]
        fast = context._appended(old, new)
        slow = context._positions(old, new)
        wanted = set(zip(slow, new, strict=True))
        general = Changes(
            removed=[e for e in old if e not in wanted],
            added=[e for e in zip(slow, new, strict=True) if e not in set(old)],
        )
        if fast is not None:
            taken += 1
            assert Changes(removed=[], added=fast) == general, (old, new)
        assert plan(old, new) == general, (old, new)
    assert taken > 100  # the fast path was tried
