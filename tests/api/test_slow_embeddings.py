"""Nothing slow blocks everything: an embedding that takes long (the local model loading on
first use, a slow provider) gives the API back to other requests while it runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import httpx
import pytest

from cairn.domain.configs import EmbeddingConfig
from cairn.embeddings.base import HashEmbedder
from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


class Gated:
    """An embedder that waits for its gate: entered says a request is inside it."""

    def __init__(self, dim: int) -> None:
        self.inner, self.model, self.dim = HashEmbedder(dim), "gated", dim
        self.entered, self.gate = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.entered.set()
        assert self.gate.wait(60), "nobody opened the gate"
        return self.inner.embed(texts)


GATES: dict[int, Gated] = {}


@pytest.fixture
def stack(db: Database) -> Iterator[Stack]:
    """A stack whose embeddings wait for their gate: the embedder handed to the engine at
    construction, one a size."""
    GATES.clear()

    def embedder_for(config: EmbeddingConfig) -> Gated:
        return GATES.setdefault(config.embedding_dim, Gated(config.embedding_dim))

    with make_stack(db, ports={"embedder_for": embedder_for}) as made:
        yield made


def test_health_and_other_agents_answer_while_an_embedding_takes_long(stack: Stack) -> None:
    headers = {"Authorization": f"Bearer {stack.key}"}
    http = httpx.Client(base_url=stack.url, headers=headers, timeout=30)
    agent = http.post("/v1/agents/", json={"name": "slow", "llm_config": LLM}).json()
    other = http.post("/v1/agents/", json={"name": "other", "llm_config": LLM}).json()
    dim = agent["embedding_config"]["embedding_dim"]
    gated = GATES.setdefault(dim, Gated(dim))
    answers: list[httpx.Response] = []
    slow = threading.Thread(
        target=lambda: answers.append(
            http.post(f"/v1/agents/{agent['id']}/archival-memory", json={"text": "tea at five"})
        )
    )
    slow.start()
    try:
        assert gated.entered.wait(30), answers
        # While the embedding waits: these would queue behind it if it held the API.
        quick = httpx.Client(base_url=stack.url, headers=headers, timeout=10)
        assert quick.get("/v1/health/").status_code == 200
        assert quick.get(f"/v1/agents/{other['id']}").json()["name"] == "other"
    finally:
        gated.gate.set()
        slow.join(60)
    assert answers and answers[0].status_code == 200, answers
    assert answers[0].json()[0]["text"] == "tea at five"
