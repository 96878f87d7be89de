"""The local server's events are API Gateway's: the path decoded as API Gateway hands it
over (a folder's or a tool's name with a space in it reaches its route whole), the query
left to the handler."""

from __future__ import annotations

from cairn.local.http import to_event


def test_the_path_is_decoded_and_the_query_kept_raw() -> None:
    event = to_event("GET", "/v1/folders/name/Trail%20notes%2Bmaps?q=a%20b&q=c", {}, b"")
    assert event["rawPath"] == "/v1/folders/name/Trail notes+maps"
    assert event["requestContext"]["http"]["path"] == "/v1/folders/name/Trail notes+maps"
    assert event["rawQueryString"] == "q=a%20b&q=c"
    assert event["queryStringParameters"] == {"q": "a b,c"}
