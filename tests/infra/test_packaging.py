"""The cairn layer as synth builds it: the sources, compiled for the runtime's Python."""

from __future__ import annotations

import datetime
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from cairn_infra.packaging import (
    RDS_CA_PATH,
    RDS_CA_SOURCE,
    RUNTIME_SOURCE,
    build_runtime_layer,
    check_rds_ca,
    refresh_rds_ca,
    target_python,
)


def certificate(name: str, *, ca: bool, days: int = 1) -> bytes:
    """A self-signed certificate, PEM: a CA's, or a server's."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    made = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return made.public_bytes(serialization.Encoding.PEM)


@pytest.fixture
def trust_store() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A local stand-in for AWS's trust store: serves whatever `files` holds by path."""
    files: dict[str, bytes] = {}

    class Serve(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Serve)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", files
    finally:
        server.shutdown()
        server.server_close()


def test_the_rds_ca_bundle_in_the_repository_is_certificate_authorities_far_from_expiry() -> None:
    """Shipped in the layer from the repository (a synth needs no network but the package
    registries): CA certificates only, none expiring within 90 days (this test fails in
    time to run `make rds-ca`), the regions' RDS roots as AWS's global bundle has them
    (RDS Proxy's certificates chain to Amazon's public roots instead: certifi's)."""
    from cryptography import x509

    found = check_rds_ca(RDS_CA_SOURCE.read_bytes(), str(RDS_CA_SOURCE))
    names = {c.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value for c in found}
    for region in ("us-east-1", "eu-west-1", "ap-southeast-2"):
        for kind in ("RSA2048", "RSA4096", "ECC384"):
            assert f"Amazon RDS {region} Root CA {kind} G1" in names
    assert all(name.startswith("Amazon RDS ") for name in names)


def test_a_refreshed_bundle_keeps_only_certificate_authorities_far_from_expiry(
    tmp_path: Path, trust_store: tuple[str, dict[str, bytes]]
) -> None:
    url, files = trust_store
    files["/global.pem"] = (
        certificate("Root A", ca=True, days=400)
        + certificate("Old root", ca=True, days=30)
        + certificate("Root B", ca=True, days=4000)
    )
    files["/server.pem"] = certificate("db.example", ca=False, days=400)
    files["/page.pem"] = b"<html>not a bundle</html>"
    target = tmp_path / "ok.pem"
    assert refresh_rds_ca(f"{url}/global.pem", target) == 2  # the one about to expire: out
    assert b"Old root" not in target.read_bytes()
    with pytest.raises(RuntimeError, match="is not a CA"):
        refresh_rds_ca(f"{url}/server.pem", tmp_path / "server.pem")
    with pytest.raises(RuntimeError, match="not a PEM bundle"):
        refresh_rds_ca(f"{url}/page.pem", tmp_path / "page.pem")
    assert not (tmp_path / "server.pem").exists() and not (tmp_path / "page.pem").exists()
    # And a bundle that would expire soon stops the synth's layer build, naming it.
    with pytest.raises(RuntimeError, match="within 90 days"):
        check_rds_ca(certificate("Old root", ca=True, days=30), "bundle")


def test_the_runtime_layer_ships_the_sources_with_bytecode_for_python_312(tmp_path: Path) -> None:
    build_runtime_layer(tmp_path)
    site = tmp_path / "python"
    shipped = {p.relative_to(site) for p in site.rglob("*.py")}
    source = {p.relative_to(RUNTIME_SOURCE / "python") for p in RUNTIME_SOURCE.rglob("*.py")}
    assert shipped == source and Path("cairn/run/steps/step.py") in shipped
    assert (site / "cairn/store/migrations/0001_initial.sql").is_file()
    assert not list(site.glob("*.egg-info"))  # the editable install's leftovers stay home
    compiled = {p.name for p in site.rglob("__pycache__/*.pyc")}
    if target_python() is None:  # synth warns and ships sources alone
        assert compiled == set()
    else:
        assert "step.cpython-312.pyc" in compiled
        assert all(".cpython-312." in name for name in compiled)


def test_every_function_imports_as_shipped_on_a_clean_python_312(tmp_path: Path) -> None:
    """Each function's asset with its layers, in a Python 3.12 that has nothing else: what
    Lambda unpacks (/var/task, /opt/python) and what its runtime adds (boto3). The layer's
    wheels are this machine's platform, not Lambda's arm64, so that they can be imported
    here; the requirement list, the builder and the layout are the shipped ones."""
    import json
    import platform
    import subprocess

    from cairn_infra.functions import SPECS
    from cairn_infra.packaging import ROOT, build_dependency_layer, target_python

    python = target_python()
    assert python is not None, "Python 3.12 (the Lambda runtime's) is needed to check this"
    machine = {"x86_64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[platform.machine()]
    build_runtime_layer(tmp_path / "runtime")
    build_dependency_layer(tmp_path / "deps", platform=f"manylinux2014_{machine}")
    assert (tmp_path / "deps" / RDS_CA_PATH).read_bytes() == RDS_CA_SOURCE.read_bytes()
    # The layer comes first on Lambda's path: what it ships of the runtime's own boto3's
    # requirements must satisfy them (python-dateutil 4, which croniter 7 would bring,
    # does not satisfy botocore's <3).
    shipped = {
        d.name.split("-")[0].lower(): d.name.split("-")[1]
        for d in (tmp_path / "deps" / "python").glob("*.dist-info")
    }
    assert int(shipped["python_dateutil"].split(".")[0]) < 3, shipped["python_dateutil"]
    provided = tmp_path / "lambda-runtime"  # the runtime's own boto3
    subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
            str(provided),
            "boto3",
        ],
        check=True,
    )
    probe = (
        "import importlib.util, json, sys\n"
        "spec = importlib.util.spec_from_file_location('handler', sys.argv[1])\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "cairn = sys.modules.get('cairn')\n"
        "print(json.dumps({'callable': callable(getattr(module, sys.argv[2])),\n"
        "                  'cairn': cairn.__file__ if cairn else None}))\n"
    )
    from tests.infra.test_stack import function, synth

    template = synth()[1].to_json()
    built = {
        "LayersRuntime": tmp_path / "runtime/python",
        "LayersDependencies": tmp_path / "deps/python",
    }
    for key, spec in SPECS.items():
        asset = ROOT / "functions" / spec.name
        module, attribute = spec.handler.split(".")
        # The layers the template gives this function, in its order.
        layers = [
            next(str(path) for prefix, path in built.items() if ref["Ref"].startswith(prefix))
            for ref in function(template, key)["Properties"].get("Layers", [])
        ]
        paths = [str(asset), *layers, str(provided)]
        done = subprocess.run(
            [
                python,
                "-I",
                "-c",
                f"import sys; sys.path[:0] = {paths!r}\n" + probe,
                str(asset / f"{module}.py"),
                attribute,
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            env={
                "PATH": "/usr/bin:/bin",
                "AWS_REGION": "us-east-1",
                "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_LAMBDA_FUNCTION_NAME": key,
            },
        )
        assert done.returncode == 0, f"{key}: {done.stderr[-2000:]}"
        found = json.loads(done.stdout.strip().splitlines()[-1])
        assert found["callable"], key
        assert found["cairn"] is None or found["cairn"].startswith(str(tmp_path)), key


def test_a_change_to_a_layer_alone_publishes_new_function_versions(tmp_path: Path) -> None:
    """`api` and `step` are invoked through a `live` alias of a published version: with
    `@aws-cdk/aws-lambda:recognizeLayerVersion` (cdk.json) a new layer makes a new version,
    so the alias moves with the library instead of keeping the old one."""
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_

    from cairn_infra.app import project_context

    def version_id(layer_text: str) -> str:
        folder = tmp_path / layer_text
        (folder / "python").mkdir(parents=True)
        (folder / "python" / "lib.py").write_text(layer_text)
        app = cdk.App(context=project_context())
        stack = cdk.Stack(app, "S")
        layer = lambda_.LayerVersion(stack, "L", code=lambda_.Code.from_asset(str(folder)))
        fn = lambda_.Function(
            stack,
            "F",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="h.handler",
            code=lambda_.Code.from_inline("x = 1"),
            layers=[layer],
        )
        return stack.resolve(fn.current_version.node.default_child.logical_id)  # type: ignore[union-attr]

    assert version_id("one") != version_id("two")
