"""Where a model or embedding call may go, and with whose credentials.

The server's provider keys (and the functions' AWS role for Bedrock) go only to the
endpoints the operator configured for them (OPENAI_BASE_URL and the like, else the
provider's own public endpoint). An agent whose config names another endpoint for such a
provider is refused: its organization adds a provider of its own (POST /v1/providers), whose
key goes to its URL. Servers that take no key (Ollama, vLLM, LM Studio...) may be named
freely, are sent no key, and their URL must pass the outbound-address policy
(`cairn.outbound`), as every URL an organization gives must.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cairn import outbound
from cairn.config import Settings
from cairn.domain.configs import EmbeddingConfig, LLMConfig

OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"
GEMINI_URL = "https://generativelanguage.googleapis.com"
# The provider types the server holds a key for: its settings' key and URL fields, and the
# provider's own public endpoints (an agent naming one of those means the provider: its
# calls go where the operator configured it).
KEYED = {
    "openai": ("openai_api_key", "openai_base_url", (OPENAI_URL,)),
    "anthropic": (
        "anthropic_api_key",
        "anthropic_base_url",
        (ANTHROPIC_URL, f"{ANTHROPIC_URL}/v1"),
    ),
    "google_ai": ("gemini_api_key", "gemini_base_url", (GEMINI_URL, f"{GEMINI_URL}/v1beta")),
}
# Bedrock's runtime in any region (FIPS too): what the functions' role may sign for.
AWS_BEDROCK = re.compile(r"^https://bedrock-runtime(-fips)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/?$")


# Embedders computed in this process: no endpoint, no key.
LOCAL_KINDS = ("hugging-face", "local", "hash")


class EndpointRefused(ValueError):
    """An endpoint a call may not go to; the message says why and what to do instead."""


@dataclass(frozen=True)
class Route:
    base_url: str | None  # None: the SDK's default (the provider's public endpoint)
    server_key: bool  # the server's own key goes with the call
    guarded: tuple[outbound.Network, ...] | None  # a tenant's URL: the policy's networks


def same(one: str | None, other: str | None) -> bool:
    return bool(one and other) and _norm(one) == _norm(other)  # type: ignore[arg-type]


def _norm(url: str) -> str:
    return url.strip().rstrip("/").lower()


def route(kind: str, endpoint: str | None, settings: Settings) -> Route:
    """Where a call of provider type `kind` naming `endpoint` goes (EndpointRefused)."""
    opened = outbound.networks(settings.outbound_networks)
    if settings.tenant_key:  # an organization's own key: to its own URL, which is checked
        url = endpoint or _configured(kind, settings)
        if url and not _public_provider(url):
            _check(url, opened)
        return Route(url, server_key=False, guarded=opened)
    if kind == "bedrock":
        if endpoint is None or same(endpoint, settings.bedrock_base_url):
            return Route(endpoint, server_key=True, guarded=None)
        if AWS_BEDROCK.match(endpoint.strip()):
            return Route(endpoint, server_key=True, guarded=None)
        raise EndpointRefused(
            f"`{endpoint}` is not a Bedrock runtime endpoint of AWS: the server's AWS role "
            "signs only for those; an organization's own Bedrock key is a provider "
            "(POST /v1/providers)"
        )
    keyed = kind if kind in KEYED else "openai"  # OpenAI-compatible types: OpenAI's key
    _, url_field, public = KEYED[keyed]
    configured = getattr(settings, url_field)
    if endpoint is None or same(endpoint, configured) or any(same(endpoint, p) for p in public):
        return Route(configured, server_key=True, guarded=None)
    if kind in KEYED:
        raise EndpointRefused(
            f"`{endpoint}` is not the endpoint this server calls {kind} at "
            f"({configured or public[0]}): the server's key goes nowhere else. To call "
            "another endpoint with a key of your own, add a provider (POST /v1/providers) "
            "with that base_url and name its models `<provider name>/<model>`"
        )
    _check(endpoint, opened)  # a server that takes no key: sent none, and checked
    return Route(endpoint, server_key=False, guarded=opened)


def _public_provider(url: str) -> bool:
    return any(same(url, p) for _, _, public in KEYED.values() for p in public)


def _configured(kind: str, settings: Settings) -> str | None:
    fields = KEYED.get(kind)
    return getattr(settings, fields[1]) if fields else None


def _check(url: str, opened: tuple[outbound.Network, ...]) -> None:
    try:
        outbound.check(url, opened)
    except outbound.Refused as err:
        raise EndpointRefused(str(err)) from None


def check_agent(llm: LLMConfig, embedding: EmbeddingConfig | None, settings: Settings) -> None:
    """Refuse (InvalidArgumentError naming the field) an agent's configs whose calls could
    not go where they name: what create, update and import check before storing."""
    from cairn.errors import InvalidArgumentError

    # A model of the organization's own provider is called with its key: its URL checked.
    own = settings.model_copy(update={"tenant_key": True})
    calls = [("llm_config.model_endpoint", llm.model_endpoint_type, llm.model_endpoint,
              own if llm.provider_category == "byok" else settings)]  # fmt: skip
    if embedding is not None and embedding.embedding_endpoint_type not in LOCAL_KINDS:
        calls.append(("embedding_config.embedding_endpoint", embedding.embedding_endpoint_type,
                      embedding.embedding_endpoint, settings))  # fmt: skip
    for field, kind, endpoint, under in calls:
        try:
            route(kind, endpoint, under)
        except EndpointRefused as err:
            raise InvalidArgumentError(f"{field}: {err}") from None


# An imported agent carries the endpoints of the server it came from (loopback mocks
# included): one the server's key may not go to, for a provider the server holds a key for,
# becomes the server's own endpoint of that provider. The rest is kept, and checked by
# `check_agent` as any other agent's.


def rehome_llm(config: LLMConfig, settings: Settings) -> LLMConfig:
    if config.provider_category == "byok":
        return config
    home = _home(config.model_endpoint_type, config.model_endpoint, settings)
    return config if home == config.model_endpoint else config.model_copy(
        update={"model_endpoint": home})  # fmt: skip


def rehome_embedding(config: EmbeddingConfig, settings: Settings) -> EmbeddingConfig:
    home = _home(config.embedding_endpoint_type, config.embedding_endpoint, settings)
    return config if home == config.embedding_endpoint else config.model_copy(
        update={"embedding_endpoint": home})  # fmt: skip


def _home(kind: str, endpoint: str | None, settings: Settings) -> str | None:
    if kind not in (*KEYED, "bedrock"):
        return endpoint
    try:
        route(kind, endpoint, settings)
        return endpoint
    except EndpointRefused:
        return None if kind == "bedrock" else getattr(settings, KEYED[kind][1]) or KEYED[kind][2][0]
