"""Letta's import as assembly registers it: the operator's `import_letta` action (the
migrate function's payload, `cairn-admin`, `cairn import-letta`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cairn.run.edge import Edge, OperatorParts
from cairn.store.db import Database

if TYPE_CHECKING:  # the import's own modules load when it runs, not with its record
    from cairn.letta_import.report import Report


def run_import(
    db: Database,
    source_url: str,
    parts: OperatorParts,
    letta_key: str | None = None,
    stop: Callable[[], bool] | None = None,
) -> Report:
    """The import with the process's parts; `letta_key` is the Letta server's
    LETTA_ENCRYPTION_KEY, if it had one. The importer is loaded here, by the action: no
    function's cold start pays for it (only the migrate function runs it)."""
    from cairn.letta_import import importer

    through = importer.ImportParts(parts.vault, letta_key or None, parts.sealer, parts.documents)
    return importer.import_letta(
        db, source_url, through, parts.progress, stop=stop, settings=parts.settings
    )


def _action(
    db: Database, event: dict[str, Any], parts: OperatorParts, stop: Callable[[], bool] | None
) -> dict[str, Any]:
    source = str(event.get("source") or "")
    key = event.get("letta_encryption_key") or None
    return run_import(db, source, parts, key, stop).as_dict()


EDGE = Edge(name="letta_import", actions={"import_letta": _action})
