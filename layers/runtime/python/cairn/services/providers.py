"""An organization's own model providers (Letta's BYOK providers): their keys kept by the
runtime's vault, never returned; their models listed and named `<provider name>/<model>`."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from cairn.domain.configs import EmbeddingConfig, LLMConfig
from cairn.domain.ids import is_id
from cairn.domain.providers import CALLABLE, RESERVED, Provider, hint
from cairn.errors import ConflictError, InvalidArgumentError, found
from cairn.llm import catalog, clients, endpoints
from cairn.llm.clients import with_key
from cairn.run.provider_vault import ProviderVault
from cairn.run.runtime import Runtime
from cairn.services.pages import Page
from cairn.services.requests import ProviderCheck, ProviderCreate, ProviderUpdate
from cairn.store import providers as store
from cairn.store.db import Connection


def check_agent(
    conn: Connection, rt: Runtime, org: str, llm: LLMConfig, embedding: EmbeddingConfig | None
) -> None:
    """Refuse (400 naming the fields) configs whose calls could not go where they say, or
    whose endpoint type, provider name, category and endpoint disagree with each other or
    with the organization's provider they name (llm.endpoints.check_agent)."""
    endpoints.check_agent(llm, embedding, rt.settings, named(conn, org, llm))


def named(conn: Connection, org: str, config: LLMConfig) -> Provider | None:
    """The organization's own provider `config.provider_name` names, if it names one."""
    name = config.provider_name
    return store.by_name(conn, org, name) if name and name not in RESERVED else None


def _vault(rt: Runtime) -> ProviderVault:
    if rt.vault is None:
        raise ConflictError("This server keeps no provider keys")
    return rt.vault


def _fetch(conn: Connection, org: str, provider_id: str) -> Provider:
    if not is_id(provider_id, "provider"):
        raise InvalidArgumentError(f"Invalid provider ID format: {provider_id}")
    return found(store.get(conn, org, provider_id), "Provider", provider_id)


def _bedrock_fields(provider_type: str, req: ProviderCreate | ProviderCheck) -> None:
    if provider_type != "bedrock":
        return
    if not (req.access_key and req.region):
        raise InvalidArgumentError(
            "access_key, region: a bedrock provider is an AWS access key id (access_key), "
            "its secret access key (api_key) and the region to call"
        )
    if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d{1,2}", req.region):
        raise InvalidArgumentError(f"region: `{req.region}` is not an AWS region (us-east-1)")


def _base_url(provider_type: str, base_url: str | None, rt: Runtime) -> None:
    """A provider's URL is an organization's: the outbound policy must allow it (400)."""
    if not base_url or provider_type not in CALLABLE:
        return
    own = rt.settings.model_copy(update={"tenant_key": True})
    try:
        endpoints.route(provider_type, base_url, own)
    except endpoints.EndpointRefused as err:
        raise InvalidArgumentError(f"base_url: {err}") from None


def _secret(req: ProviderCreate | ProviderUpdate | ProviderCheck) -> dict[str, str]:
    return {"api_key": req.api_key, **({"access_key": req.access_key} if req.access_key else {})}


def create(rt: Runtime, org: str, req: ProviderCreate, user_id: str | None = None) -> Provider:
    _bedrock_fields(req.provider_type, req)
    _base_url(req.provider_type, req.base_url, rt)
    if req.name in RESERVED:
        raise InvalidArgumentError(
            f"name: `{req.name}` is the server's own provider; choose another "
            "(models are named `<provider name>/<model>`)"
        )
    provider = Provider(
        organization_id=org,
        name=req.name,
        provider_type=req.provider_type,
        base_url=req.base_url or None,
        region=req.region,
        api_version=req.api_version,
        key_hint=hint(req.api_key),
        created_by_id=user_id,
    )
    with rt.db.connection() as conn:
        if store.by_name(conn, org, req.name) is not None:
            raise ConflictError(f"A provider named `{req.name}` exists already")
    # The key is put away first (on AWS its secret needs the provider's id); if the row
    # cannot be written after all (a racing create of the same name), the secret goes.
    sealed = _vault(rt).seal(provider, _secret(req))
    try:
        with rt.db.transaction() as conn:
            return store.create(conn, sealed)
    except Exception:
        _vault(rt).drop(sealed)
        raise


def retrieve(rt: Runtime, org: str, provider_id: str) -> Provider:
    with rt.db.connection() as conn:
        return _fetch(conn, org, provider_id)


def list_providers(
    rt: Runtime,
    org: str,
    *,
    name: str | None,
    provider_type: str | None,
    page: Page,
) -> list[Provider]:
    with rt.db.connection() as conn:
        return store.list_providers(
            conn,
            org,
            name=name,
            provider_type=provider_type,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def modify(rt: Runtime, org: str, provider_id: str, req: ProviderUpdate) -> Provider:
    with rt.db.connection() as conn:
        current = _fetch(conn, org, provider_id)
    _base_url(current.provider_type, req.base_url, rt)
    changed = current.model_copy(
        update={
            "base_url": req.base_url if req.base_url is not None else current.base_url,
            "region": req.region if req.region is not None else current.region,
            "api_version": req.api_version if req.api_version is not None else current.api_version,
            "key_hint": hint(req.api_key),
        }
    )
    secret = _secret(req)
    if current.provider_type == "bedrock" and req.access_key is None:
        # As Letta's update: a new secret access key keeps the key id it belongs to.
        secret.update({k: v for k, v in _vault(rt).open(current).items() if k == "access_key"})
    sealed = _vault(rt).seal(changed, secret)
    with rt.db.transaction() as conn:
        updated = store.update(conn, sealed)
    if rt.provider_keys is not None:
        rt.provider_keys.forget(org, current.name)
    return updated


def delete(rt: Runtime, org: str, provider_id: str) -> Provider:
    with rt.db.transaction() as conn:
        _fetch(conn, org, provider_id)
        gone = store.delete(conn, org, provider_id)
    assert gone is not None
    _vault(rt).drop(gone)
    if rt.provider_keys is not None:
        rt.provider_keys.forget(org, gone.name)
    return gone


def check(rt: Runtime, req: ProviderCheck) -> None:
    """The key works if the provider lists its models with it (raises LLMError if not)."""
    _bedrock_fields(req.provider_type, req)
    _base_url(req.provider_type, req.base_url, rt)
    _models_with(rt, req.provider_type, _secret(req), req.base_url, req.region, strict=True)


def check_existing(rt: Runtime, org: str, provider_id: str) -> Provider:
    provider = retrieve(rt, org, provider_id)
    secret = _vault(rt).open(provider)
    _models_with(
        rt, provider.provider_type, secret, provider.base_url, provider.region, strict=True
    )
    return provider


def _models_with(
    rt: Runtime,
    provider_type: str,
    secret: dict[str, str],
    base_url: str | None,
    region: str | None,
    *,
    strict: bool = False,
) -> list[str]:
    if provider_type not in CALLABLE:
        if strict:
            raise InvalidArgumentError(f"Cairn cannot check a `{provider_type}` key")
        return []
    settings = with_key(rt.settings, provider_type, secret, base_url, region)
    if provider_type == "bedrock":  # its inference profiles, by ARN, as Letta lists them
        own = settings.bedrock_own_key
        kept_as = ("bedrock", base_url or "", catalog.digest(own))
        return catalog.kept_list(
            kept_as, lambda: clients.bedrock_profiles(base_url, own), strict=strict
        )
    return catalog.remote_models(provider_type, settings, strict=strict)


def models(
    rt: Runtime,
    org: str,
    *,
    categories: Sequence[str] | None = None,
    name: str | None = None,
    kind: str | None = None,
) -> list[LLMConfig]:
    """GET /v1/models/: the server's providers' models, then each of the organization's own
    providers', named `<provider name>/<model>`; every provider asked at once. Letta's
    filters: `categories` (base, byok), the provider's `name` and type (`kind`); a provider
    they leave out is not asked."""
    lists: list[Callable[[], list[LLMConfig]]] = []
    if not categories or "base" in categories:
        lists.append(lambda: catalog.listed_models(rt.settings))
    if not categories or "byok" in categories:
        with rt.db.connection() as conn:
            own = store.list_providers(
                conn, org, name=name, provider_type=kind, limit=100, order="asc"
            )
        lists += [partial(_own_models, rt, provider) for provider in own]
    return [
        m
        for m in catalog.gathered(lists)
        if name in (None, m.provider_name or m.model_endpoint_type)
        and kind in (None, m.model_endpoint_type)
    ]


def _own_models(rt: Runtime, provider: Provider) -> list[LLMConfig]:
    try:  # the key as steps open it (kept a minute), so listing reads no secret each time
        found = (
            rt.provider_keys(provider.organization_id, provider.name)
            if rt.provider_keys
            else (provider, _vault(rt).open(provider))
        )
    except Exception:  # a key that cannot be opened lists nothing, as a failing provider
        return []
    if found is None:  # deleted since it was listed
        return []
    current, secret = found
    models = _models_with(rt, current.provider_type, secret, current.base_url, current.region)
    return [resolve(current, model) for model in models]


def resolve(provider: Provider, model: str, **limits: Any) -> LLMConfig:
    """The llm_config of `<provider name>/<model>`: the type's defaults, this provider's
    endpoint, and its name, which a step looks its key up by. A Bedrock provider's model is
    an inference profile's ARN, named as Letta names it: the ARN's last dotted part."""
    base = catalog.resolve_model(f"{provider.provider_type}/{model}", catalog.NO_KEYS, **limits)
    endpoint = provider.base_url or base.model_endpoint
    short = model.split(".")[-1] if provider.provider_type == "bedrock" else model
    return base.model_copy(
        update={
            "provider_name": provider.name,
            "provider_category": "byok",
            "model_endpoint": endpoint,
            "handle": f"{provider.name}/{short}",
        }
    )


def resolve_handle(rt: Runtime, org: str, handle: str, **limits: Any) -> LLMConfig:
    """A model handle as an agent names it: the organization's own provider's if its prefix
    is one of their names, else the server's."""
    prefix, sep, model = handle.partition("/")
    if sep and model and prefix not in RESERVED:
        with rt.db.connection() as conn:
            provider = store.by_name(conn, org, prefix)
        if provider is not None:
            if provider.provider_type not in CALLABLE:
                raise InvalidArgumentError(
                    f"model: Cairn cannot call `{provider.provider_type}` models (provider "
                    f"`{prefix}`); it calls openai, anthropic, google_ai and bedrock with "
                    "your key"
                )
            if provider.provider_type == "bedrock":
                model = _bedrock_profile(rt, provider, model)
            return resolve(provider, model, **limits)
    return catalog.configured(handle, rt.settings, **limits)


def _bedrock_profile(rt: Runtime, provider: Provider, model: str) -> str:
    """The inference profile a Bedrock provider's handle names: Letta's short name (the
    ARN's last dotted part) looked up in the provider's list, or an ARN or profile id as
    it is."""
    if model.startswith("arn:") or "." in model:
        return model
    profiles = _models_with(
        rt, "bedrock", _vault(rt).open(provider), provider.base_url, provider.region
    )
    found = [arn for arn in profiles if arn.split(".")[-1] == model]
    if not found:
        raise InvalidArgumentError(
            f"model: `{provider.name}/{model}` is none of the provider's inference profiles "
            "(GET /v1/models/ lists them)"
        )
    return found[0]
