"""The API as clients see it: the local HTTP bridge, the real handler, the fake LLM."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from letta_client import Letta

from cairn.adapters.local import lambdas
from cairn.adapters.local.inline import InlineStepQueue
from cairn.assembly.build import build_runtime, use_runtime
from cairn.assembly.edges import SETTINGS
from cairn.domain import Organization, User
from cairn.local.http import make_server
from cairn.run.runtime import Runtime
from cairn.store import tenancy
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM


@dataclass
class Stack:
    url: str
    key: str
    org_id: str
    fake: FakeLLM
    runtime: Runtime

    def client(self) -> Letta:
        return Letta(base_url=self.url, api_key=self.key, max_retries=0, timeout=30)


@contextmanager
def make_stack(
    db: Database,
    *,
    ports: dict[str, Any] | None = None,
    yielding: Any = lambdas.released,
    **settings: Any,
) -> Iterator[Stack]:
    """The local HTTP bridge over a runtime with the fake LLM as the server's providers;
    `settings` override the defaults, `ports` the engine's (assembly's `engine_ports`: a
    test's model client or embedder, handed in at construction), `yielding` how a wait
    lets other requests in (the local stack's: it gives the environment back)."""
    with FakeLLM() as fake:
        defaults: dict[str, Any] = dict(
            openai_api_key="sk-test",
            openai_base_url=f"{fake.base_url}/v1",
            anthropic_api_key="ant-test",
            anthropic_base_url=fake.base_url,
            llm_max_retries=0,
            sync_budget_seconds=20,
            # The fake serves organizations' own providers too: the operator opens loopback
            # to them (tests/api/test_outbound.py holds the policy without it).
            outbound_networks="127.0.0.0/8",
            # Its own data directory (the originals of uploaded files, the local key).
            data_dir=Path(tempfile.mkdtemp(prefix="cairn-stack-")),
        )
        # Waits let other requests in, as the local stack's do.
        rt = build_runtime(SETTINGS(**(defaults | settings)), db=db, yielding=yielding, ports=ports)
        use_runtime(rt)
        with db.transaction() as conn:
            org = tenancy.create_organization(conn, Organization(name="api"))
            user = tenancy.create_user(conn, User(organization_id=org.id, name="ada"))
            _, key = tenancy.create_api_key(conn, org.id, user.id, name="test")
        server = make_server("127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        host, port = server.server_address[:2]
        try:
            yield Stack(f"http://{host!s}:{port}", key, org.id, fake, rt)
        finally:
            server.shutdown()
            server.server_close()
            for queue in {
                id(q): q for q in (rt.queue.steps, rt.queue.embeddings, rt.queue.files)
            }.values():
                if isinstance(queue, InlineStepQueue):
                    queue.close()
            use_runtime(None)
            shutil.rmtree(defaults["data_dir"], ignore_errors=True)


@pytest.fixture
def stack(db: Database) -> Iterator[Stack]:
    with make_stack(db) as made:
        yield made
