"""What every embedder offers, and the one deterministic embedder tests rely on."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from typing import Protocol

_WORD = re.compile(r"[a-z0-9]+")


class Embedder(Protocol):
    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashEmbedder:
    """Feature hashing of words and word pairs into `dim` buckets, L2-normalised.

    Deterministic and instant: texts sharing words are close, so search tests can assert
    rankings without a model. Not for production use.
    """

    model = "cairn-hash"
    free = True  # computed here: nobody is billed for it

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        words = _WORD.findall(text.lower())
        for feature in words + [f"{a} {b}" for a, b in itertools.pairwise(words)]:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        import numpy as np  # not at import: handlers load it with their first connection

        array = np.asarray(vector)
        norm = float(np.linalg.norm(array)) or 1.0
        unit: list[float] = (array / norm).tolist()
        return unit


def batched(texts: Sequence[str], size: int) -> list[Sequence[str]]:
    return [texts[i : i + size] for i in range(0, len(texts), size)]


def estimated_tokens(texts: Sequence[str]) -> int:
    """Tokens a provider that does not say would bill for `texts`: about four characters a
    token, as OpenAI's tokenizer averages on English text."""
    return sum(len(t) // 4 + 1 for t in texts)


def embed_counted(embedder: Embedder, texts: Sequence[str]) -> tuple[list[list[float]], int]:
    """The vectors and their tokens: as the provider counted them when it says, else
    estimated."""
    counted = getattr(embedder, "embed_counted", None)
    if counted is not None:
        vectors, tokens = counted(texts)
        return vectors, int(tokens)
    return embedder.embed(texts), estimated_tokens(texts)
