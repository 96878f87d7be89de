"""Organizations' own provider keys on AWS: each a Secrets Manager secret of its own, named
`<CAIRN_PROVIDER_SECRET_PREFIX>/<organization>/<provider id>` (the functions may touch only
secrets under that prefix); the database row holds the secret's ARN."""

from __future__ import annotations

import json
from typing import Any

from cairn.domain.providers import Provider


class SecretsManagerVault:
    def __init__(self, prefix: str, client: Any = None) -> None:
        import boto3

        self.prefix = prefix.rstrip("/")
        self._client = client or boto3.client("secretsmanager")

    def seal(self, provider: Provider, secret: dict[str, str]) -> Provider:
        text = json.dumps(secret)
        if provider.key_ref:
            self._client.put_secret_value(SecretId=provider.key_ref, SecretString=text)
            return provider
        name = f"{self.prefix}/{provider.organization_id}/{provider.id}"
        try:
            made = self._client.create_secret(
                Name=name,
                SecretString=text,
                Description=f"Cairn: model provider {provider.name} of {provider.organization_id}",
                Tags=[{"Key": "cairn:organization", "Value": provider.organization_id}],
            )
        except self._client.exceptions.ResourceExistsException:
            # Sealed before for this provider, whose row was then never written (an import
            # killed between the two, run again with the same id): the new value replaces it.
            made = self._client.put_secret_value(SecretId=name, SecretString=text)
        return provider.model_copy(update={"key_ref": made["ARN"], "key_sealed": None})

    def open(self, provider: Provider) -> dict[str, str]:
        answer = self._client.get_secret_value(SecretId=provider.key_ref)
        opened: dict[str, str] = json.loads(answer["SecretString"])
        return opened

    def drop(self, provider: Provider) -> None:
        if provider.key_ref:
            self._client.delete_secret(SecretId=provider.key_ref, ForceDeleteWithoutRecovery=True)
