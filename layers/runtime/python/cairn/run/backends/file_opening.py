"""Files opened for an agent without its asking, as Letta opens them: a folder's files when the
folder is attached (`attach_folder_to_agent` -> `insert_files_into_context_window`), a file
uploaded into an attached folder once its text is read (`insert_file_into_context_windows`).

Letta's cap (`attach_files_bulk`): the new files open first, in the order given, up to the
agent's open-files limit; the files open before keep what room is left, the most recently
read ones first; the rest close. Each opened file shows its whole text, numbered, as
`open_files` with no range does (the prompt cuts it to the agent's per-file limit).
"""

from __future__ import annotations

from datetime import datetime

from cairn.domain.agents import Agent, file_limits
from cairn.domain.folders import FileAgent, FileMetadata
from cairn.memory import file_views
from cairn.store import files
from cairn.store.db import Connection


def open_for(conn: Connection, agent: Agent, new: list[FileMetadata], now: datetime) -> list[str]:
    """Open `new` for the agent within its limit; the names of the files closed to make room."""
    org = agent.organization_id
    limit = agent.max_files_open or file_limits(agent.llm_config.context_window)[0]
    by_name: dict[str, FileMetadata] = {}
    for meta in new:
        by_name.setdefault(meta.file_name, meta)
    names = list(by_name)
    open_before = sorted(
        (v for v in files.views(conn, org, agent.id) if v.is_open and v.file_name not in by_name),
        key=lambda v: v.last_accessed_at,
    )
    room = max(limit - len(names), 0)
    kept = {v.file_name for v in open_before[len(open_before) - room :]} if room else set()
    opened = set(names[:limit])
    views = [_closed(v) for v in open_before if v.file_name not in kept]
    for name, meta in by_name.items():
        view = FileAgent(
            agent_id=agent.id,
            file_id=meta.id,
            folder_id=meta.folder_id,
            organization_id=org,
            file_name=name,
            last_accessed_at=now,
        )
        if name in opened:
            text = files.content(conn, org, meta.id) or ""
            shown = "\n".join(file_views.window(text, meta.file_type, name))
            view = view.model_copy(update={"is_open": True, "visible_content": shown})
        views.append(view)
    files.put_views(conn, views)
    return [v.file_name for v in views if not v.is_open and v.file_name not in by_name]


def _closed(view: FileAgent) -> FileAgent:
    return view.model_copy(
        update={"is_open": False, "visible_content": None, "start_line": None, "end_line": None}
    )
