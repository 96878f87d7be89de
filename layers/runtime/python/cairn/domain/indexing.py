"""What recall and archival search index and embed: the words with who said them and when.

A turn rarely names its own speaker or its day, but questions about it do ("What did
Caroline research?", "When did Melanie run the race?"). Indexing "On 8 May 2023, Caroline
said: I researched adoption agencies" lets both halves of the search meet the question;
on LoCoMo it took the fused search's hit@5 from 0.66 to 0.71 (docs/memory.md). The shown
text stays the message's own words. The database spells the same words for full text
(`cairn_indexed_text`, migration 0038); a test holds the two equal.
"""

from __future__ import annotations

from datetime import UTC, datetime


def indexed_text(body: str, said_at: datetime, who: str | None = None) -> str:
    """`body` as search sees it: its UTC day, and its speaker when there is one."""
    day = said_at.astimezone(UTC)
    when = f"{day.day} {day:%B} {day.year}"
    return f"On {when}, {who} said: {body}" if who else f"On {when}: {body}"
