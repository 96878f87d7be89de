"""Packaging report: the layers' deployed sizes and each handler's cold import time.

Builds both layers exactly as `cdk synth` does (dependencies by pip for
manylinux2014_aarch64, Python 3.12; `cairn` copied; both compiled to .pyc by 3.12) and
measures them unzipped and zipped. Import times need a build this machine can load, so the
same requirements are built again for its own platform and each handler is imported in a
fresh `python3.12 -X importtime` process that writes no bytecode, as on Lambda's read-only
/opt (the median of a few runs, cumulative time of the `handler` module); once more for
`api` with `cairn` as plain sources, which is what shipping it without .pyc costs. Figures
go to the README.

    .venv/bin/python bench/packaging.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "infra"))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from cairn_infra.packaging import (  # noqa: E402
    RUNTIME_SOURCE,
    build_dependency_layer,
    build_runtime_layer,
    target_python,
)

HANDLERS = ("api", "stream", "step", "approval", "sleeptime", "sweeper", "migrate", "sandbox")
HOST_PLATFORM = {"x86_64": "manylinux2014_x86_64", "aarch64": "manylinux2014_aarch64"}


def sizes(folder: Path) -> tuple[int, int]:
    """(unzipped, zipped) bytes, zipped as Lambda receives a layer."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    unzipped = sum(p.stat().st_size for p in files)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "layer.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            for p in files:
                z.write(p, p.relative_to(folder))
        return unzipped, archive.stat().st_size


def own_ms(importtime: str) -> float:
    """Self time (ms) of Cairn's own modules and the handler in one `-X importtime` output;
    the rest of the handler's time is libraries and the standard library they pull in."""
    own = 0
    for line in importtime.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s+(\S+)$", line)
        if found and (found[2] == "handler" or found[2].split(".")[0] == "cairn"):
            own += int(found[1])
    return own / 1000


def import_ms(
    python: str, paths: list[Path], function: str, runs: int
) -> tuple[float, float, bool]:
    """Median cumulative import time of the handler (ms), the median part of it spent in
    Cairn's own modules (ms), and whether a provider SDK loaded."""
    code = (
        "import sys; import handler; "
        "print('SDK' if {'openai', 'anthropic'} & set(sys.modules) else 'NOSDK')"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in [ROOT / "functions" / function, *paths])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # /opt is read-only on Lambda
    env["PYDANTIC_DISABLE_PLUGINS"] = "__all__"  # as the functions' environment sets it
    times, own, sdk = [], [], False
    for _ in range(runs):
        done = subprocess.run(
            [python, "-X", "importtime", "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        line = next(x for x in done.stderr.splitlines() if re.search(r"\|\s+handler$", x))
        times.append(int(line.split("|")[1]) / 1000)
        own.append(own_ms(done.stderr))
        sdk = done.stdout.strip() == "SDK"
    return statistics.median(times), statistics.median(own), sdk


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    python = target_python()
    if python is None:
        print("needs a python3.12 interpreter (the Lambda runtime's version)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        deployed, host, cairn = Path(tmp) / "deployed", Path(tmp) / "host", Path(tmp) / "cairn"
        build_dependency_layer(deployed)
        build_dependency_layer(host, HOST_PLATFORM[platform.machine()])
        build_runtime_layer(cairn)
        print("layer                 unzipped     zipped")
        for name, folder in (("dependencies", deployed), ("runtime (cairn)", cairn)):
            unzipped, zipped = sizes(folder)
            print(f"{name:<18} {unzipped / 1e6:>8.1f} MB {zipped / 1e6:>7.1f} MB")
        print(f"\ncold import ({Path(python).name}, median of {args.runs}, .pyc shipped)")
        print("handler      import   Cairn's modules   libraries")
        for function in HANDLERS:
            ms, own, sdk = import_ms(
                python, [host / "python", cairn / "python"], function, args.runs
            )
            note = "  (loads a provider SDK)" if sdk else ""
            print(f"{function:<10} {ms:>6.0f} ms {own:>14.0f} ms {ms - own:>8.0f} ms{note}")
        plain = Path(tmp) / "plain"
        shutil.copytree(
            RUNTIME_SOURCE / "python", plain, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
        ms, _, _ = import_ms(python, [host / "python", plain], "api", args.runs)
        print(f"api, cairn without .pyc: {ms:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
