"""Which adapter the settings choose, for each port a caller builds for itself (assembly, and
an import run outside the API): the AWS one where the stack configured it, else the local."""

from __future__ import annotations

from cairn.config import Settings
from cairn.run.metering import Meter, NoMeter
from cairn.run.ports import DocumentStore
from cairn.run.provider_vault import EnvelopeVault, ProviderVault
from cairn.sealing import envelope_key


def vault_for(settings: Settings) -> ProviderVault:
    """Organizations' own provider keys: Secrets Manager on AWS, sealed in the row locally."""
    if settings.provider_secret_prefix:
        from cairn.adapters.aws.provider_secrets import SecretsManagerVault

        return SecretsManagerVault(settings.provider_secret_prefix)
    return EnvelopeVault(lambda: envelope_key(settings))


def documents_for(settings: Settings) -> DocumentStore:
    """The originals' store: the bucket on AWS, a directory of the data dir locally."""
    if settings.documents_bucket:
        from cairn.adapters.aws.documents import S3Documents

        return S3Documents(settings.documents_bucket)
    from cairn.adapters.local.directory_documents import DirectoryDocuments

    return DirectoryDocuments(settings.data_dir / "documents")


def meter_for(settings: Settings) -> Meter:
    """The operator's metrics: CloudWatch's embedded format where the stack asks for it
    (CAIRN_METRICS=emf), else none."""
    if settings.metrics == "emf":
        from cairn.adapters.aws.metrics import EmfMeter

        return EmfMeter()
    return NoMeter()
