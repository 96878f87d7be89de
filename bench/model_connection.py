"""What a new TLS connection costs a model call, against one kept from the call before
(cairn/outbound.py, KEEPALIVE_SECONDS: httpx drops an idle connection after 5 s).

A local HTTPS server (a self-signed P-256 certificate made here) answers a 30 KB POST, as a
model's request body is; the client is httpx2, as the OpenAI and Anthropic SDKs' is. Prints
the client thread's CPU a request over one kept connection and over a new connection each
time (interleaved rounds), and the wall time of each. A provider's certificate chain is
longer (RSA, two or three certificates) and its round trips are real: this is the least a
new connection costs.

    .venv/bin/python bench/model_connection.py [-n 200]
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import ssl
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

BODY = b"x" * 30_000


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        reply = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


def _certificate(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=200, help="requests of each kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = _certificate(Path(tmp))
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
        served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        served.load_cert_chain(cert, key)
        server.socket = served.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"https://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
        trusted = ssl.create_default_context(cafile=str(cert))
        cpu: dict[str, list[float]] = {"kept": [], "new": []}
        wall: dict[str, list[float]] = {"kept": [], "new": []}
        with httpx2.Client(verify=trusted) as kept:
            kept.post(url, content=BODY)
            for i in range(2 * args.n):
                kind = ("kept", "new")[i % 2]
                client = kept if kind == "kept" else httpx2.Client(verify=trusted)
                started, clock = time.thread_time(), time.perf_counter()
                client.post(url, content=BODY)
                cpu[kind].append(time.thread_time() - started)
                wall[kind].append(time.perf_counter() - clock)
                if client is not kept:
                    client.close()
        server.shutdown()
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"{args.n} requests each, interleaved (load {load})\n")
    print("| connection | client CPU a request (median) | wall time (median) |")
    print("| --- | --- | --- |")
    for kind, label in (("kept", "kept from the call before"), ("new", "new (TLS handshake)")):
        print(
            f"| {label} | {statistics.median(cpu[kind]) * 1000:.2f} ms"
            f" | {statistics.median(wall[kind]) * 1000:.2f} ms |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
