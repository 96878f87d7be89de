"""web_search's searching: Exa's search through its own SDK (`exa-py`), as Letta 0.16.1 does,
answered in Letta's shape. The key is the agent's `EXA_API_KEY` secret, else the server's;
the endpoint is the operator's (`CAIRN_EXA_BASE_URL`, Exa's by default)."""

from __future__ import annotations

import json
from typing import Any

NO_KEY = (
    "EXA_API_KEY is not set in environment or on agent_state tool execution environment variables."
)


def search(
    query: str,
    *,
    key: str,
    base_url: str | None,
    num_results: int = 10,
    include_text: bool = False,
    **filters: Any,
) -> str:
    """Letta's answer: {"query", "results": [{title, url, published_date, author, text?,
    highlights?, summary?}]}, or {"query", "error"} when the search failed."""
    if not query.strip():
        return json.dumps({"error": "Query cannot be empty", "query": query})
    from exa_py import Exa

    params: dict[str, Any] = {
        "num_results": min(max(num_results, 1), 100),
        "type": "auto",
        **{k: v for k, v in filters.items() if v},
    }
    contents: dict[str, Any] = {
        "text": include_text,
        "highlights": {"num_sentences": 2, "highlights_per_url": 3, "query": query},
        "summary": {
            "query": f"Summarize the key information from this content related to: {query}"
        },
    }
    try:
        exa = Exa(api_key=key, base_url=base_url or "https://api.exa.ai", timeout=30.0)
        found = exa.search_and_contents(query, **params, **contents)
    except Exception as err:  # the model reads why, as from Letta
        return json.dumps({"query": query, "error": f"Search failed: {err}"})
    results = []
    for res in found.results:
        item: dict[str, Any] = {
            "title": res.title,
            "url": res.url,
            "published_date": res.published_date,
            "author": res.author,
        }
        if include_text and getattr(res, "text", None):
            item["text"] = res.text
        if getattr(res, "highlights", None):
            item["highlights"] = res.highlights
        if getattr(res, "summary", None):
            item["summary"] = res.summary
        results.append(item)
    return json.dumps({"query": query, "results": results}, indent=2, ensure_ascii=False)
