"""Which client serves an agent's llm_config; SDKs are imported on first use only."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Protocol

from cairn import outbound
from cairn.config import Settings
from cairn.domain.configs import LLMConfig
from cairn.llm import endpoints, patience
from cairn.llm.types import LLMError, LLMRequest, LLMResponse, OnDelta

Networks = tuple[outbound.Network, ...]
Waits = tuple[float, float]  # a model call's: for its first byte, then between bytes

# Endpoint types that speak OpenAI's Chat Completions at their own base URL.
OPENAI_COMPATIBLE = frozenset(
    {
        "openai",
        "ollama",
        "vllm",
        "lmstudio",
        "lmstudio_openai",
        "openai_compatible",
        "together",
        "groq",
        "deepseek",
        "xai",
        "openrouter",
        "mistral",
    }
)


class LLMClient(Protocol):
    def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        """The model's response; with `on_delta`, streamed from the provider and handed on
        piece by piece as it arrives (a provider that cannot stream answers whole)."""
        ...


def client_for(
    config: LLMConfig, settings: Settings, own: endpoints.OwnKey | None = None
) -> LLMClient:
    """The client for a call under `config`: the server's key of its endpoint type to the
    server's endpoint, or (`provider_category` byok) the organization's provider `own` with
    its key at its URL; the address and the key resolved together by `endpoints.target`.
    LLMError, nothing sent, for a config that may not be called as it says."""
    try:
        to = endpoints.target(config, settings, own)
    except endpoints.EndpointRefused as err:
        raise LLMError("bad_request", f"{err.field}: {err}") from None
    kind, timeout, retries = to.kind, settings.llm_timeout_seconds, settings.llm_max_retries
    waits = (settings.llm_first_byte_seconds, settings.llm_idle_seconds)
    if kind == "anthropic":
        return _anthropic(to.base_url, to.api_key, timeout, retries, to.guarded, waits)
    if kind == "google_ai":
        sdk = gemini_sdk(to.base_url, to.api_key, timeout, to.guarded, waits)
        from cairn.llm.gemini import Gemini

        return Gemini(sdk, retries)
    if kind == "bedrock":
        return _bedrock(to.base_url, timeout, retries, to.aws_key)
    if kind in OPENAI_COMPATIBLE:
        # Local servers (Ollama, vLLM) take any key; the SDK insists on one.
        key = to.api_key or ("unused" if kind != "openai" else None)
        return _openai(to.base_url, key, timeout, retries, to.guarded, waits)
    raise LLMError("bad_request", f"model_endpoint_type `{kind}` is not supported")


# One client per endpoint and key: each holds a connection pool that warm Lambdas reuse.
# `guarded`: the URL is an organization's, every connection goes through the outbound policy.
@lru_cache(maxsize=16)
def _openai(
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    retries: int,
    guarded: Networks | None = None,
    waits: Waits | None = None,
) -> LLMClient:
    import openai

    from cairn import heap
    from cairn.llm.openai_chat import OpenAIChat

    heap.settle("openai")  # its thousands of type classes live as long as the process

    if api_key is None:
        raise LLMError(
            "auth",
            "no model provider is configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for "
            "an OpenAI-compatible server) or ANTHROPIC_API_KEY",
        )
    return OpenAIChat(
        openai.OpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=retries,
            http_client=_http(guarded, timeout, waits=waits),
        )
    )


@lru_cache(maxsize=16)
def _anthropic(
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    retries: int,
    guarded: Networks | None = None,
    waits: Waits | None = None,
) -> LLMClient:
    import anthropic

    from cairn import heap
    from cairn.llm.anthropic_messages import AnthropicMessages

    heap.settle("anthropic")

    if api_key is None:
        raise LLMError("auth", "no Anthropic API key: set ANTHROPIC_API_KEY")
    return AnthropicMessages(
        anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=retries,
            http_client=_http(guarded, timeout, waits=waits),
        )
    )


def _http(
    guarded: Networks | None, timeout: float, stack: str = "httpx2", waits: Waits | None = None
) -> Any:
    """The HTTP client for an SDK (OpenAI's and Anthropic's speak httpx2, Google's httpx):
    `guarded`, a tenant's URL, through the outbound policy; `waits`, a model call, with its
    waits bounded (`llm.patience`); None: the SDK's own."""
    if waits is not None:
        inner = None if guarded is None else outbound.transport(guarded, stack)
        return patience.http_client(stack, timeout, *waits, inner=inner)
    return None if guarded is None else outbound.http_client(guarded, timeout, stack)


# One client per endpoint and key, for calls and embeddings: each holds its own connections.
@lru_cache(maxsize=16)
def gemini_sdk(
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    guarded: Networks | None = None,
    waits: Waits | None = None,
) -> Any:
    if api_key is None:
        raise LLMError("auth", "no Gemini API key: set GEMINI_API_KEY")
    from google import genai

    from cairn import heap

    heap.settle("google.genai")
    http = _http(guarded, timeout, "httpx", waits)
    options = genai.types.HttpOptions(
        timeout=int(timeout * 1000), base_url=base_url, httpx_client=http
    )
    return genai.Client(api_key=api_key, http_options=options)


BedrockOwnKey = tuple[str, str, str] | None  # (access key id, secret, region): Settings


def with_key(
    settings: Settings,
    provider_type: str,
    secret: dict[str, str],
    base_url: str | None = None,
    region: str | None = None,
) -> Settings:
    """The settings a call with an organization's own key (and endpoint) is made under."""
    # None of the server's keys stays in settings made for an organization's.
    wiped: dict[str, Any] = {key: None for key, _, _ in endpoints.KEYED.values()}
    if provider_type == "bedrock":  # Letta's fields: access_key the id, api_key the secret
        if not (secret.get("access_key") and secret.get("api_key") and region):
            raise LLMError("auth", "A bedrock provider needs access_key, api_key and region")
        own = (secret["access_key"], secret["api_key"], region)
        return settings.model_copy(update={**wiped, "bedrock_own_key": own, "tenant_key": True})
    fields = endpoints.KEYED.get(provider_type)
    if fields is None:
        raise LLMError("bad_request", f"Cairn cannot call `{provider_type}` with a key of its own")
    key_field, url_field, public = fields
    # Its URL is explicit: an SDK given none reads the server's from the environment
    # (OPENAI_BASE_URL), and the organization's key would go there.
    update = {
        **wiped,
        key_field: secret.get("api_key"),
        url_field: base_url or public[0],
        "tenant_key": True,
    }
    return settings.model_copy(update=update)


def wire_body(request: LLMRequest) -> dict[str, Any]:
    """The body the request's provider is sent (OpenAI's chat, Anthropic's messages,
    Gemini's contents and config)."""
    if request.config.model_endpoint_type == "google_ai":
        from cairn.llm import gemini

        contents, config = gemini.request_body(request)
        return {"contents": contents, "config": config}
    if request.config.model_endpoint_type == "anthropic":
        from cairn.llm import anthropic_messages

        return anthropic_messages.request_body(request)
    from cairn.llm import openai_chat

    return openai_chat.request_body(request)


def _bedrock(endpoint: str | None, timeout: float, retries: int, own: BedrockOwnKey) -> LLMClient:
    from cairn.llm.bedrock_converse import BedrockConverse

    return BedrockConverse(
        bedrock_runtime(endpoint, timeout, retries, own),
        lambda seconds: bedrock_runtime(endpoint, min(seconds, timeout), 0, own),
    )


# Bedrock's clients are made by an AWS adapter (boto3 lives there only); the process's
# assembly installs them once at start (adapters/aws/bedrock.py): the runtime client's
# factory, and the lister of a key's inference profiles.
_bedrock_factory: Callable[[str | None, float, int, BedrockOwnKey], Any] | None = None
_bedrock_profiles: Callable[[str | None, BedrockOwnKey], list[str]] | None = None


def use_bedrock(
    factory: Callable[[str | None, float, int, BedrockOwnKey], Any],
    profiles: Callable[[str | None, BedrockOwnKey], list[str]],
) -> None:
    global _bedrock_factory, _bedrock_profiles
    _bedrock_factory, _bedrock_profiles = factory, profiles


def bedrock_profiles(endpoint: str | None, own: BedrockOwnKey) -> list[str]:
    """The inference profiles a Bedrock key may use, by ARN (as Letta lists its models)."""
    if _bedrock_profiles is None:
        raise LLMError("bad_request", "Bedrock is not set up in this process")
    return _bedrock_profiles(endpoint, own)


def bedrock_runtime(
    endpoint: str | None, timeout: float, retries: int, own: BedrockOwnKey = None
) -> Any:
    if _bedrock_factory is None:
        raise LLMError("bad_request", "Bedrock is not set up in this process")
    return _bedrock_factory(endpoint, timeout, retries, own)
