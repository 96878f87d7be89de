"""Agent files as assembly registers them: the export and import routes."""

from __future__ import annotations

from cairn.run.edge import Edge

EDGE = Edge(name="agent_files", routes=("cairn.agent_files.routes",))
