"""Embedding providers: the local MiniLM model, OpenAI's API (fake server), the defaults."""

from __future__ import annotations

import math

import pytest

from cairn.config import Settings
from cairn.domain.configs import EmbeddingConfig
from cairn.embeddings.base import HashEmbedder
from cairn.embeddings.providers import MiniLMEmbedder, default_config, embedder_for
from tests.fakes.llm_server import FakeLLM


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )


def test_local_minilm_puts_similar_meanings_close() -> None:
    config = default_config(Settings())  # no key: the local model, installed by make dev/test
    assert (config.embedding_endpoint_type, config.embedding_dim) == ("hugging-face", 384)
    model = embedder_for(config, Settings())
    assert isinstance(model, MiniLMEmbedder)
    tea, drinks, train = model.embed(
        ["Ada loves green tea", "Ada enjoys drinking tea", "The train to Paris leaves at nine"]
    )
    assert len(tea) == 384 and cosine(tea, drinks) > cosine(tea, train) + 0.3


def test_a_query_alone_embeds_as_it_would_among_stored_texts() -> None:
    # A query takes a shorter path through the model than a batch (no `encode`): its
    # vector must still be the one the stored texts' vectors are compared with.
    model = MiniLMEmbedder()
    texts = ["When did Ada go to Lisbon?", "hi", "word " * 600, "Ünïcödé 日本語 🎉", ""]
    batch = model.embed(texts)
    assert model._query is not None  # ONNX Runtime's path is the one checked here
    for text, together in zip(texts, batch, strict=True):
        (alone,) = model.embed([text])
        assert len(alone) == 384
        assert max(abs(x - y) for x, y in zip(alone, together, strict=True)) < 1e-5
        assert abs(math.sqrt(sum(x * x for x in alone)) - 1) < 1e-5  # normalised, as stored


def test_openai_embeddings_batch_and_ask_for_their_dimensions() -> None:
    with FakeLLM() as fake:
        settings = Settings(openai_api_key="sk", openai_base_url=f"{fake.base_url}/v1")
        config = EmbeddingConfig(
            embedding_model="text-embedding-3-small",
            embedding_dim=512,
            embedding_endpoint_type="openai",
            batch_size=2,
        )
        vectors = embedder_for(config, settings).embed([f"text {n}" for n in range(5)])
    assert [len(r["input"]) for r in fake.embedding_requests] == [2, 2, 1]
    assert {r["dimensions"] for r in fake.embedding_requests} == {512}
    assert len(vectors) == 5 and all(len(v) == 512 for v in vectors)
    # Order kept across batches; the vectors come as OpenAI sends what its SDK asks for by
    # default (base64 of float32s), so they are the fake's to float32 precision.
    assert {r["encoding_format"] for r in fake.embedding_requests} == {"base64"}
    assert vectors[3] == pytest.approx(HashEmbedder(512).embed(["text 3"])[0], abs=1e-7)


def test_a_key_makes_openai_the_default() -> None:
    config = default_config(Settings(openai_api_key="sk"))
    assert config.embedding_model == "text-embedding-3-small" and config.embedding_dim == 1536
