"""Model and embedding handles (`provider/model`) resolved against the configured providers.

Letta 0.16.1 renames its OpenAI provider when OPENAI_BASE_URL points elsewhere and then
refuses both spellings; Cairn keeps `openai/<model>` working against any compatible server.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from cairn.config import Settings
from cairn.domain.configs import EmbeddingConfig, LLMConfig
from cairn.domain.constants import DEFAULT_CONTEXT_WINDOW
from cairn.errors import InvalidArgumentError
from cairn.llm.endpoints import ANTHROPIC_URL, GEMINI_URL, OPENAI_URL

# Gemini's embedding models, by their full size (gemini-embedding-001 can be asked for less).
GEMINI_EMBEDDING_DIMS = {"gemini-embedding-001": 3072, "text-embedding-004": 768}
EMBEDDING_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
# Known windows; anything else gets Letta's default and can be set with context_window_limit.
CONTEXT_WINDOWS = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "o4-mini": 200_000,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
}


# Defaults only: the endpoints of a provider type when nothing is configured.
NO_KEYS = Settings()


def providers(settings: Settings) -> list[str]:
    found = []
    if settings.openai_api_key or settings.openai_base_url:
        found.append("openai")
    if settings.anthropic_api_key:
        found.append("anthropic")
    if settings.gemini_api_key:
        found.append("google_ai")
    return found


# The server's key for each provider, as its environment names it (config.py).
KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server)",
    "anthropic": "ANTHROPIC_API_KEY",
    "google_ai": "GEMINI_API_KEY",
}


def unsupported(provider: str, settings: Settings) -> InvalidArgumentError:
    """Letta's refusal of a handle whose provider the server has no key for, and what to do
    about it: a newcomer's first agent on a stack with no key met only the list (in which
    Bedrock, called with the functions' role, always stands)."""
    names = ", ".join([*providers(settings), "bedrock"])
    refusal = f"Provider {provider} is not supported (supported providers: {names})"
    variable = KEY_VARIABLES.get(provider)
    if variable is None:
        return InvalidArgumentError(refusal)
    return InvalidArgumentError(
        f"{refusal}. This server has no key for {provider}: set {variable} where it runs and "
        "start it again, or give your organization its own key (POST /v1/providers/)"
    )


def configured(handle: str, settings: Settings, **limits: int | None) -> LLMConfig:
    """`resolve_model` for an agent of the server's providers: refused at create when the
    server has no key for the handle's provider (Letta's 400), not at the first send.
    Bedrock is called with the functions' role, so it needs none."""
    provider, sep, _ = handle.partition("/")
    if sep and provider != "bedrock" and provider not in providers(settings):
        raise unsupported(provider, settings)
    return resolve_model(handle, settings, **limits)


def resolve_model(
    handle: str,
    settings: Settings,
    *,
    context_window: int | None = None,
    max_tokens: int | None = None,
) -> LLMConfig:
    provider, sep, model = handle.partition("/")
    if not sep or not model:
        raise InvalidArgumentError(
            f"model: `{handle}` is not a handle; use provider/model, e.g. openai/gpt-4o-mini"
        )
    if provider not in ("openai", "anthropic", "bedrock", "google_ai"):
        raise unsupported(provider, settings)
    endpoint: str | None
    if provider == "bedrock":  # the model id as Bedrock names it; the region's endpoint
        window = context_window or 200_000
        endpoint = None
    elif provider == "anthropic":
        window = context_window or 200_000
        endpoint = settings.anthropic_base_url or ANTHROPIC_URL
    elif provider == "google_ai":  # Letta's name for the Gemini API
        window = context_window or CONTEXT_WINDOWS.get(model, 1_048_576)
        endpoint = settings.gemini_base_url or GEMINI_URL
    else:
        window = context_window or CONTEXT_WINDOWS.get(model, DEFAULT_CONTEXT_WINDOW)
        endpoint = settings.openai_base_url or OPENAI_URL
    return LLMConfig(
        model=model,
        model_endpoint_type=provider,
        model_endpoint=endpoint,
        context_window=window,
        max_tokens=max_tokens or default_max_tokens(provider, model),
        handle=handle,
    )


def default_max_tokens(provider: str, model: str) -> int:
    """The output limit an agent gets unless it names one: Letta 0.16.1's per-provider
    defaults (`get_default_max_output_tokens` of its providers)."""
    if provider == "openai":
        return 100_000 if model.startswith(("o1", "o3")) else 16_384
    if provider == "anthropic":
        return 16_384 if "opus" in model or "sonnet" in model else 8_192
    if provider == "google_ai":
        return 65_536 if "2.5" in model or "2-5" in model or model.startswith("gemini-3") else 8_192
    return 4_096


# Bedrock's embedding models Cairn knows the size of (Titan v2 can be asked for less).
BEDROCK_EMBEDDING_DIMS = {
    "amazon.titan-embed-text-v2:0": 1024,
    "amazon.titan-embed-text-v1": 1536,
    "cohere.embed-english-v3": 1024,
    "cohere.embed-multilingual-v3": 1024,
}


def resolve_embedding(handle: str, settings: Settings) -> EmbeddingConfig:
    provider, sep, model = handle.partition("/")
    if provider == "bedrock" and model in BEDROCK_EMBEDDING_DIMS:
        return EmbeddingConfig(
            embedding_model=model,
            embedding_endpoint_type="bedrock",
            embedding_endpoint=None,
            embedding_dim=BEDROCK_EMBEDDING_DIMS[model],
            embedding_chunk_size=300,
            handle=handle,
        )
    if provider == "google_ai" and model in GEMINI_EMBEDDING_DIMS:
        return EmbeddingConfig(
            embedding_model=model,
            embedding_endpoint_type="google_ai",
            embedding_endpoint=settings.gemini_base_url or GEMINI_URL,
            embedding_dim=GEMINI_EMBEDDING_DIMS[model],
            embedding_chunk_size=300,
            handle=handle,
        )
    if provider != "openai" or not sep or not model:
        raise InvalidArgumentError(
            f"embedding: `{handle}` is not a known embedding handle; use openai/<model>, "
            f"bedrock/<one of {', '.join(BEDROCK_EMBEDDING_DIMS)}> or "
            f"google_ai/<one of {', '.join(GEMINI_EMBEDDING_DIMS)}>"
        )
    return EmbeddingConfig(
        embedding_model=model,
        embedding_endpoint_type="openai",
        embedding_endpoint=settings.openai_base_url or OPENAI_URL,
        embedding_dim=EMBEDDING_DIMS.get(model, 1536),
        embedding_chunk_size=300,
        handle=handle,
    )


# A provider's model list, once it answered, is kept this long per endpoint and key:
# GET /v1/models/ is asked often (clients, the ADE) and each list is a round trip of its own.
LIST_SECONDS = 300.0
_lists: dict[tuple[str, str, str], tuple[float, list[str]]] = {}
_lists_lock = threading.Lock()
T = TypeVar("T")


def listed_models(settings: Settings) -> list[LLMConfig]:
    """What GET /v1/models/ shows: the providers' own model lists, when they answer."""

    def of(provider: str) -> Callable[[], list[LLMConfig]]:
        return lambda: [
            resolve_model(f"{provider}/{model}", settings)
            for model in remote_models(provider, settings)
        ]

    return gathered([of(provider) for provider in providers(settings)])


def gathered(lists: list[Callable[[], list[T]]]) -> list[T]:
    """The lists made at once (each a provider's round trip, up to its 5 s timeout), joined
    in order: a slow provider costs its own time, not the sum of all of them."""
    if len(lists) < 2:
        return [item for make in lists for item in make()]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(len(lists), 8)) as pool:
        made = list(pool.map(lambda make: make(), lists))
    return [item for items in made for item in items]


def remote_models(provider: str, settings: Settings, *, strict: bool = False) -> list[str]:
    """The provider's own list of its models; [] if it cannot list them, or with `strict`
    the provider's error (a key that does not work: `auth`)."""
    from cairn.llm.errors import translate_errors
    from cairn.llm.gemini import gemini_errors

    def listed() -> list[str]:
        with translate_errors(), gemini_errors():
            return _listed(provider, settings)

    return kept_list(_list_key(provider, settings), listed, strict=strict)


def kept_list(
    kept_as: tuple[str, str, str], listed: Callable[[], list[str]], *, strict: bool = False
) -> list[str]:
    """`listed()`, or what it gave in the last LIST_SECONDS for the same (provider,
    endpoint, key digest). `strict` (a key being checked) always asks, and raises what the
    provider answered; otherwise a provider that cannot list gives [] (its known handles
    still serve), and that is not kept."""
    with _lists_lock:
        kept = _lists.get(kept_as)
    if kept is not None and not strict and time.monotonic() - kept[0] < LIST_SECONDS:
        return kept[1]
    try:
        fresh = listed()
    except Exception:
        if strict:
            raise
        return []
    with _lists_lock:
        _lists[kept_as] = (time.monotonic(), fresh)
    return fresh


def digest(secret: object) -> str:
    """What a kept list is filed under instead of the key itself."""
    return hashlib.sha256(repr(secret).encode()).hexdigest()


def _list_key(provider: str, settings: Settings) -> tuple[str, str, str]:
    """(provider, endpoint, a digest of the key): the key itself is not kept."""
    key, url = {
        "openai": (settings.openai_api_key, settings.openai_base_url),
        "anthropic": (settings.anthropic_api_key, settings.anthropic_base_url),
        "google_ai": (settings.gemini_api_key, settings.gemini_base_url),
    }.get(provider, (None, None))
    return provider, url or "", digest(key or "")


def _listed(provider: str, settings: Settings) -> list[str]:
    from cairn.llm import endpoints

    _, url_field, _ = endpoints.KEYED[provider]
    # An organization's own provider is asked at its URL, through the outbound policy.
    to = endpoints.route(provider, getattr(settings, url_field), settings)
    if provider == "google_ai":
        from cairn.llm.clients import gemini_sdk

        sdk = gemini_sdk(to.base_url, settings.gemini_api_key, 5.0, to.guarded)
        return sorted(
            (m.name or "").removeprefix("models/")
            for m in sdk.models.list()
            if "generateContent" in (m.supported_actions or ())
        )
    from cairn import outbound

    guarded = None if to.guarded is None else outbound.http_client(to.guarded, 5.0, "httpx2")
    if provider == "openai":
        import openai

        with openai.OpenAI(  # closed here: a client per listing, not left to the collector
            api_key=settings.openai_api_key or "unused",
            base_url=to.base_url,
            timeout=5,
            max_retries=0,
            http_client=guarded,
        ) as client:
            return sorted(m.id for m in client.models.list())
    import anthropic

    with anthropic.Anthropic(
        api_key=settings.anthropic_api_key,
        base_url=to.base_url,
        timeout=5,
        max_retries=0,
        http_client=guarded,
    ) as maker:
        return sorted(m.id for m in maker.models.list())


def embedding_models(settings: Settings) -> list[EmbeddingConfig]:
    """The embedding models a new agent can name: OpenAI's and Gemini's, with their keys."""
    found = providers(settings)
    openai_models = ("text-embedding-3-small", "text-embedding-3-large")
    return [
        *(resolve_embedding(f"openai/{m}", settings) for m in openai_models if "openai" in found),
        *(
            resolve_embedding(f"google_ai/{m}", settings)
            for m in GEMINI_EMBEDDING_DIMS
            if "google_ai" in found
        ),
    ]
