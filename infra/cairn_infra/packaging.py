"""The two Lambda layers, built on this machine without Docker: third-party dependencies and
the `cairn` library.

The dependency layer is `[project] dependencies` of pyproject.toml installed by pip for the
Lambda runtime's platform and Python (`--platform manylinux2014_aarch64 --only-binary=:all:`),
and the RDS certificate authorities' bundle that AWS documents ("Using SSL/TLS to encrypt a
connection to a DB cluster"), kept in the repository (`rds-ca-bundle.pem`, refreshed from
AWS's trust store by `make rds-ca`): a function connecting to the cluster itself
(`size=small`) checks its certificate against it.
Both layers are compiled to `.pyc` by that same Python version: `/opt` is read-only on
Lambda, so uncompiled modules would be compiled again on every cold start.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import re
import shutil
import subprocess
import sys
import tomllib
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

if TYPE_CHECKING:
    from cryptography.x509 import Certificate

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64
PLATFORM = "manylinux2014_aarch64"
PYTHON_VERSION = "3.12"
# boto3 comes with the Lambda runtime; the rest of the runtime dependencies go in the layer.
EXCLUDED = ("boto3",)
RUNTIME_SOURCE = ROOT / "layers" / "runtime"
# Local build leftovers that never ship (the editable install writes the egg-info).
SKIP = ("__pycache__", "*.pyc", "*.egg-info")
# AWS's global bundle of RDS root CAs (every commercial region's, as of its copy; RDS
# Proxy's certificates chain to Amazon's public roots instead, certifi's), kept in the
# repository so that a synth needs no network but the package registries; `make rds-ca`
# refreshes it from AWS's trust store.
RDS_CA_URL = "https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem"
RDS_CA_SOURCE = Path(__file__).resolve().parent / "rds-ca-bundle.pem"
# A bundle is refreshed before any of its certificates has less than this left.
RDS_CA_MARGIN_DAYS = 90
# Where the bundle is in the functions (the layer unpacks under /opt).
RDS_CA_PATH = Path("rds-ca") / "global-bundle.pem"
RDS_CA_BUNDLE = f"/opt/{RDS_CA_PATH}"


def runtime_requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [r for r in project["dependencies"] if not r.startswith(EXCLUDED)]


def target_python() -> str | None:
    """An interpreter of the runtime's Python version, to compile the .pyc files with."""
    pyenv = Path.home().glob(f".pyenv/versions/{PYTHON_VERSION}.*/bin/python{PYTHON_VERSION}")
    for candidate in [*sorted(str(p) for p in pyenv), f"python{PYTHON_VERSION}"]:
        found = shutil.which(candidate)
        # A pyenv shim exists even where that version is not selected: it must really run.
        if found and subprocess.run([found, "-c", ""], capture_output=True).returncode == 0:
            return found
    return None


def build_dependency_layer(
    output_dir: Path, platform: str = PLATFORM, rds_ca: Path = RDS_CA_SOURCE
) -> None:
    """`python/` of the dependency layer in output_dir, with .pyc for the runtime's Python,
    and the RDS CA bundle (checked: CAs only, none about to expire)."""
    check_rds_ca(rds_ca.read_bytes(), str(rds_ca))
    site = output_dir / "python"
    # --no-compile: this interpreter is not the runtime's; compileall below is.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "--target",
            str(site),
            "--platform",
            platform,
            "--implementation",
            "cp",
            "--python-version",
            PYTHON_VERSION,
            "--only-binary=:all:",
            "--upgrade",
            *runtime_requirements(),
        ],
        check=True,
    )
    compile_for_runtime(site)
    (output_dir / RDS_CA_PATH).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(rds_ca, output_dir / RDS_CA_PATH)


def check_rds_ca(
    data: bytes, where: str, *, now: datetime.datetime | None = None
) -> list[Certificate]:
    """The bundle's certificates; a RuntimeError naming the first that is not a CA or
    expires within RDS_CA_MARGIN_DAYS (refresh it: `make rds-ca`)."""
    from cryptography import x509

    soon = _margin(now)
    certificates = _certificates(data, where)
    for certificate in certificates:
        name = certificate.subject.rfc4514_string()
        try:
            is_ca = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            is_ca = False
        if not is_ca:
            raise RuntimeError(f"{where}: {name} is not a CA")
        if certificate.not_valid_after_utc < soon:
            raise RuntimeError(
                f"{where}: {name} expires {certificate.not_valid_after_utc.date()}, within "
                f"{RDS_CA_MARGIN_DAYS} days: refresh the bundle (make rds-ca)"
            )
    return certificates


def refresh_rds_ca(
    url: str = RDS_CA_URL, target: Path = RDS_CA_SOURCE, *, now: datetime.datetime | None = None
) -> int:
    """Download AWS's bundle into `target` (the repository's), leaving out certificates that
    expire within the margin (AWS keeps old roots in it for a while); refused unless the rest
    are CA certificates. Returns how many were kept."""
    from cryptography.hazmat.primitives import serialization

    with urllib.request.urlopen(url, timeout=60) as answer:
        found = _certificates(answer.read(), url)
    soon = _margin(now)
    lasting = [c for c in found if c.not_valid_after_utc >= soon]
    if not lasting:
        raise RuntimeError(f"{url}: no certificate valid for {RDS_CA_MARGIN_DAYS} more days")
    kept = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in lasting)
    check_rds_ca(kept, url, now=now)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(kept)
    return len(lasting)


@functools.cache
def rds_ca_regions(source: Path = RDS_CA_SOURCE) -> frozenset[str]:
    """The regions the bundle holds a root for, by their names ("Amazon RDS us-east-1 Root
    CA RSA2048 G1"): a cluster elsewhere could not be checked against it."""
    from cryptography.x509.oid import NameOID

    found: set[str] = set()
    for certificate in _certificates(source.read_bytes(), str(source)):
        for name in certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME):
            named = re.fullmatch(
                r"Amazon RDS ([a-z]{2}(?:-[a-z]+)+-\d+) Root CA.*", str(name.value)
            )
            if named:
                found.add(named.group(1))
    return frozenset(found)


def _certificates(data: bytes, where: str) -> list[Certificate]:
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError as err:
        raise RuntimeError(f"{where}: not a PEM bundle of certificates ({err})") from err


def _margin(now: datetime.datetime | None) -> datetime.datetime:
    """The date before which no certificate of the bundle may expire."""
    today = now or datetime.datetime.now(datetime.UTC)
    return today + datetime.timedelta(days=RDS_CA_MARGIN_DAYS)


def build_runtime_layer(output_dir: Path) -> None:
    """`python/` of the cairn layer: layers/runtime's sources, with .pyc beside them."""
    site = output_dir / "python"
    shutil.copytree(
        RUNTIME_SOURCE / "python", site, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*SKIP)
    )
    compile_for_runtime(site)


def compile_for_runtime(site: Path) -> None:
    python = target_python()
    if python is None:
        print(f"warning: no python{PYTHON_VERSION} found; {site} ships without .pyc")
        return
    # unchecked-hash: the layer's files carry the zip's timestamps, not the sources' ones.
    subprocess.run(
        [
            python,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "--invalidation-mode",
            "unchecked-hash",
            str(site),
        ],
        check=True,
    )


@jsii.implements(ILocalBundling)
class LocalBundling:
    """A layer built on this machine by `build(output_dir)`: no Docker needed."""

    def __init__(self, build: Callable[[Path], None]) -> None:
        self._build = build

    def try_bundle(self, output_dir: str, *, image: DockerImage, **_: object) -> bool:
        self._build(Path(output_dir))
        return True


def _bundled(build: Callable[[Path], None]) -> BundlingOptions:
    return BundlingOptions(image=DockerImage.from_registry("unused"), local=LocalBundling(build))


class Layers(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, skip_bundling: bool) -> None:
        super().__init__(scope, construct_id)
        # skip_bundling: tests and quick synths, where the layers' content does not matter.
        runtime_source = str(RUNTIME_SOURCE)
        skipped = [f"**/{pattern}" for pattern in SKIP]
        if skip_bundling:
            deps_code = lambda_.Code.from_asset(str(ROOT / "layers" / "deps"))
            runtime_code = lambda_.Code.from_asset(runtime_source, exclude=skipped)
        else:
            deps_code = lambda_.Code.from_asset(
                str(ROOT / "layers" / "deps"),
                asset_hash=_requirements_hash(),
                asset_hash_type=AssetHashType.CUSTOM,
                bundling=_bundled(build_dependency_layer),
            )
            runtime_code = lambda_.Code.from_asset(
                runtime_source, exclude=skipped, bundling=_bundled(build_runtime_layer)
            )
        self.dependencies = self._layer(
            "Dependencies",
            deps_code,
            "Cairn's third-party dependencies (pydantic, psycopg, providers' SDKs)",
        )
        self.runtime = self._layer(
            "Runtime",
            runtime_code,
            "The cairn library (layers/runtime, compiled for the runtime's Python)",
        )

    def _layer(
        self, construct_id: str, code: lambda_.Code, description: str
    ) -> lambda_.LayerVersion:
        return lambda_.LayerVersion(
            self,
            construct_id,
            code=code,
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description=description,
        )


def _requirements_hash() -> str:
    bundle = hashlib.sha256(RDS_CA_SOURCE.read_bytes()).hexdigest()
    text = "\n".join([PLATFORM, PYTHON_VERSION, bundle, *runtime_requirements()])
    return hashlib.sha256(text.encode()).hexdigest()


if __name__ == "__main__":  # `make rds-ca`
    kept = refresh_rds_ca()
    print(f"{RDS_CA_SOURCE}: {kept} certificates from {RDS_CA_URL}")
