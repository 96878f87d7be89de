"""Embedding providers: the local MiniLM model, OpenAI's API (fake server), the defaults."""

from __future__ import annotations

import math

import pytest

from cairn.config import Settings
from cairn.domain.configs import EmbeddingConfig
from cairn.embeddings.base import Embedder, HashEmbedder
from cairn.embeddings.providers import MiniLMEmbedder, default_config, embedder_for
from cairn.llm.types import LLMError
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


def _openai_embedder(fake: FakeLLM, dim: int = 8) -> Embedder:
    settings = Settings(openai_api_key="sk", openai_base_url=f"{fake.base_url}/v1")
    config = EmbeddingConfig(
        embedding_model="text-embedding-3-small",
        embedding_dim=dim,
        embedding_endpoint_type="openai",
    )
    return embedder_for(config, settings)


def test_a_compatible_server_answering_lists_in_any_order_is_read_in_the_texts_order() -> None:
    # Servers that speak OpenAI's API but not its base64 (older vLLM, LM Studio) answer
    # lists of numbers whatever was asked, and nothing says their data comes in order.
    texts = ["the heron", "by the lake", "at dawn"]
    with FakeLLM() as fake:
        fake.embedding_answer = lambda body: {
            "data": [
                {"index": i, "embedding": HashEmbedder(8).embed([body["input"][i]])[0]}
                for i in (2, 0, 1)
            ],
            "usage": {"prompt_tokens": 9},
        }
        vectors, tokens = _openai_embedder(fake).embed_counted(texts)  # type: ignore[attr-defined]
        assert vectors == HashEmbedder(8).embed(texts)  # exactly: no float32 on the way
        assert tokens == 9
        # A server that says nothing of tokens (or something else) is estimated, not trusted.
        fake.embedding_answer = lambda body: {
            "data": [{"index": 0, "embedding": [0.5] * 8}],
            "usage": "plenty",
        }
        _, tokens = _openai_embedder(fake).embed_counted(["twelve chars"])  # type: ignore[attr-defined]
    assert tokens == 4  # estimated_tokens: 12 // 4 + 1


@pytest.mark.parametrize(
    "answer",
    [
        {"data": []},
        {"object": "list"},
        {"data": [{"index": 0, "embedding": "AAAA"}]},  # three bytes: not whole float32s
        {"data": [{"index": 0, "embedding": "A"}]},  # not base64
        {"data": [{"index": 0, "embedding": ["a", "b"]}]},
        {"data": [{"index": 0, "embedding": None}]},
        {"data": ["not an object"]},
    ],
    ids=[
        "no vectors",
        "no data",
        "part of a float32",
        "not base64",
        "not numbers",
        "null",
        "not an object",
    ],
)
def test_an_embeddings_answer_without_a_vector_per_text_is_the_servers_error(
    answer: dict[str, object],
) -> None:
    with FakeLLM() as fake:
        fake.embedding_answer = lambda body: answer
        with pytest.raises(LLMError) as raised:
            _openai_embedder(fake).embed(["one text"])
    assert raised.value.kind == "server" and "embedding server" in str(raised.value)


def test_a_key_makes_openai_the_default() -> None:
    config = default_config(Settings(openai_api_key="sk"))
    assert config.embedding_model == "text-embedding-3-small" and config.embedding_dim == 1536
