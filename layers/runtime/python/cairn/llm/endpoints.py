"""Where a model or embedding call may go, and with whose credentials.

The server's provider keys (and the functions' AWS role for Bedrock) go only to the
endpoints the operator configured for them (OPENAI_BASE_URL and the like, else the
provider's own public endpoint). An agent whose config names another endpoint for such a
provider is refused: its organization adds a provider of its own (POST /v1/providers), whose
key goes to its URL. Servers that take no key (Ollama, vLLM, LM Studio...) may be named
freely, are sent no key, and their URL must pass the outbound-address policy
(`cairn.outbound`), as every URL an organization gives must.

`target` resolves a model call's address and its credential together, from one source: the
server's settings for the server's providers, the organization's provider record (type,
URL and key) for its own. A config whose endpoint type, provider name, category and endpoint
disagree is refused (EndpointRefused naming the fields) before anything is sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cairn import outbound
from cairn.config import Settings
from cairn.domain.configs import EmbeddingConfig, LLMConfig
from cairn.domain.providers import CALLABLE, Provider

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
    """An endpoint a call may not go to; the message says why and what to do instead, and
    `field` names what is at fault."""

    def __init__(self, message: str, field: str = "llm_config.model_endpoint") -> None:
        super().__init__(message)
        self.field = field


Networks = tuple[outbound.Network, ...]
AwsKey = tuple[str, str, str]  # an organization's access key id, secret access key, region
OwnKey = tuple[Provider, dict[str, str]]  # an organization's provider and its opened key


@dataclass(frozen=True)
class Target:
    """One model call's address and the one credential that goes with it."""

    kind: str  # the wire protocol: model_endpoint_type
    base_url: str | None  # None: the SDK's default (the provider's public endpoint)
    api_key: str | None  # sent with the call; None: no key
    guarded: Networks | None  # a tenant's URL: every connection through the policy
    aws_key: AwsKey | None = None  # Bedrock: an organization's credentials; None: the role


@dataclass(frozen=True)
class Route:
    base_url: str | None  # None: the SDK's default (the provider's public endpoint)
    server_key: bool  # the server's own key goes with the call
    guarded: tuple[outbound.Network, ...] | None  # a tenant's URL: the policy's networks


def same(one: str | None, other: str | None) -> bool:
    return bool(one and other) and _norm(one) == _norm(other)  # type: ignore[arg-type]


def _norm(url: str) -> str:
    return url.strip().rstrip("/").lower()


def target(config: LLMConfig, settings: Settings, own: OwnKey | None = None) -> Target:
    """Where a call under `config` goes and with which credential (EndpointRefused).

    A model of the organization's own provider (`provider_category` byok) goes to that
    provider's URL with that provider's key, and only if the config agrees with the provider
    (`own`: looked up by `provider_name`); any other config goes where the server's rules
    send it, with the server's key of its endpoint type or none.
    """
    kind = config.model_endpoint_type
    if config.provider_category == "byok":
        provider, secret = own if own is not None else (None, {})
        url = own_url(config, provider, settings)
        assert provider is not None  # own_url refuses a config naming none
        if kind != "bedrock":
            opened = outbound.networks(settings.outbound_networks)
            return Target(kind, url, secret.get("api_key"), opened)
        if not (secret.get("access_key") and secret.get("api_key") and provider.region):
            raise EndpointRefused(
                "a bedrock provider needs access_key, api_key and region",
                "llm_config.provider_name",
            )
        aws = (secret["access_key"], secret["api_key"], provider.region)
        return Target(kind, url, None, None, aws_key=aws)
    _category(config)
    if settings.tenant_key:  # settings made for a provider's own key serve its configs only
        raise EndpointRefused(
            "an organization's key serves its provider's models only",
            "llm_config.provider_category",
        )
    to = route(kind, config.model_endpoint, settings)
    if kind == "bedrock":
        return Target(kind, to.base_url, None, None)
    key = getattr(settings, KEYED.get(kind, KEYED["openai"])[0]) if to.server_key else None
    return Target(kind, to.base_url, key, to.guarded)


def own_url(config: LLMConfig, provider: Provider | None, settings: Settings) -> str | None:
    """The URL a model of an organization's provider is called at: the provider's own
    `base_url` (else the provider type's public endpoint), if `config` agrees with the
    provider on its name, type and endpoint; checked by the outbound policy."""
    name, kind, endpoint = config.provider_name, config.model_endpoint_type, config.model_endpoint
    if provider is None or provider.name != name:
        raise EndpointRefused(
            f"your organization has no provider named `{name}` (provider_category byok names "
            "one of the providers API's)",
            "llm_config.provider_name",
        )
    if provider.provider_type != kind:
        raise EndpointRefused(
            f"provider `{name}` is of type `{provider.provider_type}`, the config's "
            f"model_endpoint_type is `{kind}`: a provider's key is sent in its own type's "
            "requests only",
            "llm_config.model_endpoint_type, llm_config.provider_name",
        )
    if kind not in CALLABLE:
        raise EndpointRefused(
            f"Cairn cannot call `{kind}` providers with a key of their own (provider "
            f"`{name}`); it calls openai, anthropic, google_ai and bedrock with your key",
            "llm_config.provider_name",
        )
    url = provider.base_url
    public = KEYED[kind][2] if kind in KEYED else ()
    if url is None:  # the provider's public endpoint: the config may name it
        agrees = (
            endpoint is None
            or any(same(endpoint, p) for p in public)
            or (kind == "bedrock" and bool(AWS_BEDROCK.match(endpoint.strip())))
        )
    else:
        agrees = endpoint is None or same(endpoint, url)
    if not agrees:
        raise EndpointRefused(
            f"`{endpoint}` is not where provider `{name}` is called "
            f"({url or (public[0] if public else 'AWS')}): its key goes there only"
        )
    if url and not _public_provider(url):
        _check(url, outbound.networks(settings.outbound_networks))
    return url or (public[0] if public else None)


def _category(config: LLMConfig) -> None:
    if config.provider_category not in (None, "base"):
        raise EndpointRefused(
            f"`{config.provider_category}` is not a provider category: base (the server's "
            "providers) or byok (one of your organization's)",
            "llm_config.provider_category",
        )


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


def check_agent(
    llm: LLMConfig,
    embedding: EmbeddingConfig | None,
    settings: Settings,
    provider: Provider | None = None,
) -> None:
    """Refuse (InvalidArgumentError naming the fields) an agent's configs whose calls could
    not go where they name, or whose fields disagree: what create, update and import check
    before storing. `provider`: the organization's provider `llm.provider_name` names."""
    from cairn.errors import InvalidArgumentError

    try:
        if llm.provider_category == "byok":
            own_url(llm, provider, settings)
        else:
            _category(llm)
            if provider is not None:
                raise EndpointRefused(
                    f"`{llm.provider_name}` is your organization's own provider: its models "
                    "are provider_category byok, called with its key",
                    "llm_config.provider_category, llm_config.provider_name",
                )
            route(llm.model_endpoint_type, llm.model_endpoint, settings)
        if embedding is not None:
            _embedding_route(embedding, settings)
    except EndpointRefused as err:
        raise InvalidArgumentError(f"{err.field}: {err}") from None


def check_embedding(embedding: EmbeddingConfig, settings: Settings) -> None:
    """Refuse (InvalidArgumentError naming the field) an archive's or folder's embedding
    config whose calls could not go where it names, when it is stored: it failed only at its
    first use (a 502, a file's processing ended `error`)."""
    from cairn.errors import InvalidArgumentError

    try:
        _embedding_route(embedding, settings)
    except EndpointRefused as err:
        raise InvalidArgumentError(f"{err.field}: {err}") from None


def _embedding_route(embedding: EmbeddingConfig, settings: Settings) -> None:
    if embedding.embedding_endpoint_type in LOCAL_KINDS:
        return
    try:
        route(embedding.embedding_endpoint_type, embedding.embedding_endpoint, settings)
    except EndpointRefused as err:
        raise EndpointRefused(str(err), "embedding_config.embedding_endpoint") from None


# An imported agent carries the endpoints of the server it came from (loopback mocks
# included): one the server's key may not go to, for a provider the server holds a key for,
# becomes the server's own endpoint of that provider. The rest is kept, and checked by
# `check_agent` as any other agent's.


def rehome_llm(config: LLMConfig, settings: Settings) -> LLMConfig:
    if config.provider_category == "byok":
        return config
    home = _home(config.model_endpoint_type, config.model_endpoint, settings)
    return (
        config
        if home == config.model_endpoint
        else config.model_copy(update={"model_endpoint": home})
    )


def rehome_embedding(config: EmbeddingConfig, settings: Settings) -> EmbeddingConfig:
    home = _home(config.embedding_endpoint_type, config.embedding_endpoint, settings)
    return (
        config
        if home == config.embedding_endpoint
        else config.model_copy(update={"embedding_endpoint": home})
    )


def _home(kind: str, endpoint: str | None, settings: Settings) -> str | None:
    if kind not in (*KEYED, "bedrock"):
        return endpoint
    try:
        route(kind, endpoint, settings)
        return endpoint
    except EndpointRefused:
        return None if kind == "bedrock" else getattr(settings, KEYED[kind][1]) or KEYED[kind][2][0]
