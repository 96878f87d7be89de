"""Letta's voice memory tools over a step: the numbered transcript `store_memories` points
into, the XML a stored chunk becomes, and what `search_memory` answers."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from typing import Any

from cairn.domain.messages import Message

# Letta's voice summarizer numbers the transcript it sends: "0. user: hi".
_NUMBERED = re.compile(r"^(\d+)\. (.*)$")
ARCHIVAL_LIMIT, KEYWORD_LIMIT = 5, 3  # Letta's _search_memory


def transcript(inputs: list[Message]) -> dict[int, str]:
    """The numbered lines of the turn's input, by number."""
    lines: dict[int, str] = {}
    for message in inputs:
        for line in message.text.splitlines():
            if found := _NUMBERED.match(line.strip()):
                lines[int(found[1])] = found[2]
    return lines


def chunk_text(lines: dict[int, str], start: int, end: int, context: str) -> str:
    """A chunk as Letta stores it (serialize_message_history): its lines and its context."""
    picked = [lines[i] for i in range(start, end + 1) if i in lines]
    if not picked:
        raise ValueError(
            f"Failed to store memory given start_index {start} and end_index {end}: no "
            "numbered line of this turn's transcript is in that range"
        )
    root = ET.Element("memory")
    listed = ET.SubElement(root, "messages")
    for line in picked:
        ET.SubElement(listed, "message").text = line
    ET.SubElement(root, "context").text = context
    return ET.tostring(root, encoding="unicode")


def window(
    now: datetime, start_minutes_ago: int | None, end_minutes_ago: int | None
) -> tuple[datetime | None, datetime | None]:
    """(from, to) of a search in minutes ago; swapped when the model reversed them."""
    start = now - timedelta(minutes=end_minutes_ago) if end_minutes_ago is not None else None
    end = now - timedelta(minutes=start_minutes_ago) if start_minutes_ago is not None else None
    if start and end and start > end:
        start, end = end, start
    return start, end


def latest_utterance(messages: list[Message]) -> str:
    """The user's last words (heartbeats and system alerts are not words)."""
    for message in reversed(messages):
        if message.role == "user" and (text := message.search_text()):
            return text
    return ""


def answer(archival: list[dict[str, Any]], keywords: dict[str, list[str]] | None) -> str:
    """Letta's search_memory text: archival hits, then recall hits by keyword if asked."""
    found: dict[str, Any] = {
        "archival_search_results": [
            {"timestamp": hit["timestamp"], "content": hit["content"]} for hit in archival
        ]
    }
    if keywords is not None:
        found["convo_keyword_search_results"] = keywords
    return json.dumps(found, indent=2)
