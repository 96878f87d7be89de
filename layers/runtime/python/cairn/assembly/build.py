"""The parts a process shares across invocations: settings, database pool, engine, queue.

Built once per Lambda container (warm invocations reuse it) or once by the local stack.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from cairn import heap, tracing
from cairn.adapters.aws import bedrock
from cairn.adapters.aws.secrets import (
    database_conninfo,
    egress_key,
    sealing_key,
    with_provider_keys,
)
from cairn.adapters.chosen import documents_for, meter_for, vault_for
from cairn.assembly.edges import EDGES, SETTINGS
from cairn.config import Settings
from cairn.jobs import queue_kinds
from cairn.llm import deadline
from cairn.run.ports import Scheduler, StepQueue, Workflows
from cairn.run.provider_vault import ProviderKeys
from cairn.run.runtime import Extensions, Outlets, Runtime
from cairn.run.steps.step import Engine
from cairn.sealing import Sealer
from cairn.store.db import IDLE_CHECK_SECONDS, Database
from cairn.tools.sandbox import Sandbox
from cairn.tools.subprocess_sandbox import SubprocessSandbox

# What the background jobs and the edges add to the core: their queue messages, what runs
# around a step, the sweeper's phases (what a run's end starts goes to the engine above).
EXTENSIONS = Extensions(
    kinds={**queue_kinds.KINDS, **{k: v for e in EDGES for k, v in e.kinds.items()}},
    around_step=tuple(a for e in EDGES for a in e.around_step),
    sweep=(("embedded", queue_kinds.backfill_phase), *(p for e in EDGES for p in e.sweep)),
)
RUN_END = tuple(r for e in EDGES for r in e.run_end)
# Tools served outside Cairn: one edge serves them (MCP servers' tools).
(EXTERNAL_TOOLS,) = (e.external_tools for e in EDGES if e.external_tools is not None)


def engine_ports(settings: Settings) -> dict[str, Any]:
    """The engine's model clients, embedders and sealer as the settings make them."""
    from cairn.embeddings import providers
    from cairn.llm.clients import client_for

    return {
        "llm_for": lambda config: client_for(config, settings),
        "embedder_for": lambda config: providers.embedder_for(config, settings),
        "sealer": Sealer(sealing_key(settings)),
    }


_lock = threading.Lock()
_current: Runtime | None = None


def build_runtime(
    settings: Settings,
    *,
    db: Database | None = None,
    queue: StepQueue | None = None,
    workflows: Workflows | None = None,
    embeddings: StepQueue | None = None,
    yielding: Callable[[], AbstractContextManager[None]] = nullcontext,
    ports: dict[str, Any] | None = None,
) -> Runtime:
    """The runtime of one process. `ports` replaces any of `engine_ports` (the tests' fakes:
    a model's client or an embedder, handed in here, never swapped in afterwards)."""
    bedrock.install()  # model and embedding calls to Bedrock get their boto3 client here
    tracing.configure()  # OTLP export when the OTEL_* variables ask for it (cairn/tracing.py)
    database = db or Database(
        database_conninfo(settings),
        max_size=settings.db_pool_size,
        prepare=settings.prepare_statements,
        # A session the server ends when idle is pinged before use, and replaced.
        idle_check_seconds=min(IDLE_CHECK_SECONDS, (settings.db_idle_session_seconds or 60) / 2),
    )
    # A request arriving while the database resumes (a small stack's Aurora pauses when
    # idle) waits for it within its own deadline; a sync send left with too little time
    # answers 202 with its run, as when the model is slow.
    database.wait_within(deadline.seconds_left)
    sandbox: Sandbox
    if settings.sandbox_function:
        from cairn.adapters.aws.lambda_sandbox import LambdaSandbox

        sandbox = LambdaSandbox(
            settings.sandbox_function, proxy=settings.tool_egress_proxy, key=egress_key(settings)
        )
    else:
        private = tuple(n.strip() for n in settings.tool_private_networks.split(",") if n.strip())
        shown = tuple(p.strip() for p in settings.mcp_stdio_paths.split(",") if p.strip())
        sandbox = SubprocessSandbox(
            isolation=settings.sandbox_isolation,
            egress_private_networks=private,
            stdio_paths=shown,
        )
    vault = vault_for(settings)
    keys = ProviderKeys(database, vault)
    scheduler = scheduler_for(settings)
    engine = Engine(
        database,
        settings,
        sandbox=sandbox,
        provider_keys=keys,
        **(engine_ports(settings) | (ports or {})),
        scheduler=scheduler.put if scheduler is not None else None,
        run_end=RUN_END,
        external_tools=EXTERNAL_TOOLS,
        meter=meter_for(settings),
    )
    inline = False  # a part made here runs in this process: `serve` starts its consumer
    if embeddings is None and settings.embed_queue_url:
        from cairn.adapters.aws.sqs import SqsStepQueue

        embeddings = SqsStepQueue(settings.embed_queue_url)
    if queue is None:
        if settings.step_queue_url:
            from cairn.adapters.aws.sqs import SqsStepQueue

            queue = SqsStepQueue(settings.step_queue_url)
        else:
            from cairn.adapters.local.inline import InlineStepQueue

            queue, inline = InlineStepQueue(), True
            # Not behind the steps on their one thread: a slow embedding holds no turn.
            embeddings = embeddings or InlineStepQueue()
    if workflows is None:
        if settings.approval_state_machine_arn and settings.sleeptime_state_machine_arn:
            from cairn.adapters.aws.stepfunctions import StepFunctionsWorkflows

            workflows = StepFunctionsWorkflows(
                settings.approval_state_machine_arn, settings.sleeptime_state_machine_arn
            )
        else:
            from cairn.adapters.local.inline import InlineWorkflows

            workflows, inline = InlineWorkflows(), True
    files: StepQueue | None = None
    if settings.files_queue_url:
        from cairn.adapters.aws.sqs import SqsStepQueue

        files = SqsStepQueue(settings.files_queue_url)
    outlets = Outlets(queue, workflows, embeddings, files)
    rt = Runtime(
        settings,
        database,
        engine,
        outlets,
        workflows,
        vault,
        keys,
        documents_for(settings),
        scheduler,
        yielding,
        EXTENSIONS,
    )
    if inline:
        from cairn.adapters.local.inline import serve

        serve(rt)  # the consumers of the in-process queues and workflows, given the runtime
    return rt


def scheduler_for(settings: Settings) -> Scheduler | None:
    """EventBridge Scheduler where the stack set it up; else the sweeper fires them alone."""
    if not (
        settings.scheduler_group and settings.scheduler_target_arn and settings.scheduler_role_arn
    ):
        return None
    from cairn.adapters.aws.scheduler import EventBridgeScheduler

    return EventBridgeScheduler(
        settings.scheduler_group, settings.scheduler_target_arn, settings.scheduler_role_arn
    )


def runtime() -> Runtime:
    global _current
    with _lock:
        if _current is None:
            _current = build_runtime(with_provider_keys(SETTINGS.from_env()))
            heap.settle("runtime")  # with the handler's imports: they outlive every request
        return _current


def after_restore() -> None:
    """SnapStart resumed this environment from a snapshot: drop its database connections."""
    with _lock:
        if _current is not None:
            _current.db.reset()


def snapshotting() -> bool:
    """Whether this initialisation ends in a SnapStart snapshot (what it imports, every
    restore has), rather than a plain cold start (what it imports, every cold start pays)."""
    return os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start"


def preload_for_snapshot() -> None:
    """Import what a step needs before the snapshot is taken, so restores skip it; only
    under SnapStart (the plain cold-start import path stays free of the providers' SDKs).
    Called after the handler's app is built: the models of its routes are built too."""
    if not snapshotting():
        return
    import anthropic  # noqa: F401
    import openai  # noqa: F401
    from google import genai  # noqa: F401

    # The turn's modules, loaded by a first step.
    from cairn.run.steps import approval_step, compaction_step, llm_step  # noqa: F401

    build_deferred_models()
    try:  # the Lambda Python runtime ships this module for SnapStart hooks
        from snapshot_restore_py import register_after_restore
    except ImportError:
        return
    register_after_restore(after_restore)


def build_deferred_models() -> None:
    """Build the validator of every Cairn model imported so far. Cold starts build each on
    first use (`DEFERRED`); a snapshot should hold them built, as it holds the SDKs."""
    from pydantic import BaseModel

    todo = [BaseModel]
    while todo:
        for model in todo.pop().__subclasses__():
            todo.append(model)
            if model.__module__.startswith("cairn.") and not model.__pydantic_complete__:
                model.model_rebuild()


def current_settings() -> Settings:
    """The running runtime's settings, or the environment's when none is built yet (a
    request that needs no database, such as a browser's preflight, builds none)."""
    return _current.settings if _current is not None else SETTINGS.from_env()


def use_runtime(value: Runtime | None) -> None:
    """Install the runtime a process uses (the local stack and tests build their own)."""
    global _current
    with _lock:
        _current = value
