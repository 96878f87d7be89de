"""Agent files as assembly registers them: the export and import routes."""

from __future__ import annotations

from cairn.run.edge import Edge

EDGE = Edge(
    name="agent_files",
    routes={
        "cairn.agent_files.routes": (
            "/agents/<agent_id>/export",
            "/agents/<agent_id>/history/<version>/export",
            "/agents/import",
        )
    },
)
