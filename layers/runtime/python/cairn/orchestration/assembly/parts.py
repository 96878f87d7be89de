"""The parts a process shares across invocations, as one record.

Kept apart from `build.py`, which builds it and chooses the adapters: the adapters
(inline queue, workers, tasks) take a Runtime without importing the module that builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from cairn.config import Settings
from cairn.engine.step import Engine
from cairn.orchestration.aws.provider_vault import ProviderKeys, ProviderVault
from cairn.orchestration.ports import DocumentStore, Scheduler, Workflows
from cairn.orchestration.routing import Outlets
from cairn.store.db import Database


@dataclass
class Runtime:
    settings: Settings
    db: Database
    engine: Engine
    queue: Outlets  # every outbox kind: steps to the queue, workflows to Step Functions
    workflows: Workflows
    vault: ProviderVault | None = None  # organizations' own provider keys
    provider_keys: ProviderKeys | None = None
    documents: DocumentStore | None = None  # the originals of files in folders
    scheduler: Scheduler | None = None  # fires scheduled messages on time (AWS)
    # What a request holds while it waits (a sleep between polls, a model or embedding call,
    # an image's download): the local stack's API is a few environments shared by every
    # request, so it lets other requests in meanwhile (`local.lambdas.released`); on Lambda
    # each request has an environment of its own and holds nothing.
    yielding: Callable[[], AbstractContextManager[None]] = nullcontext
