"""The OpenAI-compatible door as assembly registers it: its one route."""

from __future__ import annotations

from cairn.run.edge import Edge

EDGE = Edge(
    name="chat_completions",
    routes={
        "cairn.chat_completions.routes": (
            "/chat/completions",
            "/voice-beta/<agent_id>/chat/completions",
        )
    },
)
