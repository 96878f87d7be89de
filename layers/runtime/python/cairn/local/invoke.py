"""`make invoke FN=<function> EVENT=<file>`: one handler, one sample event, the local database.

`${NAME}` placeholders in the event are filled from the environment (`AGENT_ID`, `RUN_ID`,
`ORG_ID`, `TOOL_CALL_ID`, ...); `${CAIRN_API_KEY}` defaults to the local stack's key and
`${ORG_ID}` to its organization. Uses
DATABASE_URL, or the embedded server's data under CAIRN_DATA_DIR (stop `make dev` first).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from string import Template
from typing import Any

from cairn.adapters.local import lambdas
from cairn.adapters.local.inline import InlineStepQueue
from cairn.api.app import Streaming
from cairn.assembly.build import build_runtime, use_runtime
from cairn.assembly.edges import SETTINGS
from cairn.services.tenants import ensure_local_tenant, organization_of
from cairn.store import Database
from cairn.store.migrate import apply_migrations


def substitute(text: str, values: dict[str, str]) -> dict[str, Any]:
    """The event with `${NAME}` filled in; names without a value stay as written."""
    event: dict[str, Any] = json.loads(Template(text).safe_substitute(values))
    return event


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make invoke", description=__doc__)
    parser.add_argument("function", help="a folder of functions/, e.g. api or step")
    parser.add_argument("event", type=Path, help="a JSON event, e.g. events/api/health.json")
    parser.add_argument("--attribute", default="handler", help="the handler's name in the file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    settings = SETTINGS.from_env()
    handle = None
    dsn = settings.database_url
    if dsn is None:
        from cairn.local.postgres import start_embedded

        dsn, handle = start_embedded(settings.data_dir / "pgdata", cleanup="stop")
        os.environ["DATABASE_URL"] = dsn
    try:
        apply_migrations(dsn)
        db = Database(dsn, max_size=4)
        key_file = settings.data_dir / "api-key"
        known = settings.api_key or (key_file.read_text().strip() if key_file.exists() else None)
        key, _ = ensure_local_tenant(db, known)
        rt = build_runtime(settings.model_copy(update={"step_queue_url": None}), db=db)
        use_runtime(rt)
        # ORG_ID defaults to the local organization (the one the key opens).
        values = {"ORG_ID": organization_of(db, key) or "", **os.environ, "CAIRN_API_KEY": key}
        event = substitute(args.event.read_text(), values)
        result = lambdas.invoke(args.function, event, attribute=args.attribute)
        if isinstance(result, Streaming):  # its head, then its body as it comes
            print(json.dumps(result.head, indent=2))
            for piece in result.body:
                sys.stdout.write(piece.decode())
                sys.stdout.flush()
            result = None
        queue = rt.queue.steps
        while isinstance(queue, InlineStepQueue) and not queue.idle():
            time.sleep(0.05)  # let continuation steps finish before the database stops
        if result is not None:
            print(json.dumps(result, indent=2, default=str))
        db.close()
    finally:
        if handle is not None:
            handle.cleanup()  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main())
