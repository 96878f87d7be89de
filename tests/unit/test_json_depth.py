"""The API refuses a JSON body nested past MAX_JSON_DEPTH before anything parses it: the
decoder would otherwise recurse to the interpreter's limit, where a garbage collection runs
other objects' finalisers with no recursion budget left (seen as unraisable RecursionErrors)."""

from __future__ import annotations

from cairn.api.app import MAX_JSON_DEPTH, nests_deeper


def test_depth_is_counted_through_arrays_and_objects_but_not_strings() -> None:
    assert nests_deeper('{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1), 256)
    assert not nests_deeper('{"a":' * MAX_JSON_DEPTH + "1" + "}" * MAX_JSON_DEPTH, 256)
    assert not nests_deeper('{"text": "' + "[" * 5000 + '"}', 256)  # inside a string
    assert not nests_deeper('{"q": "\\"[[["}' + "[]" * 300, 256)  # an escaped quote
    assert not nests_deeper("[" + "{}," * 5000 + "{}]", 256)  # many, side by side
