"""The repository's shape that deployment relies on."""

from __future__ import annotations

import ast
from pathlib import Path

import cairn

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "layers" / "runtime" / "python" / "cairn"


def test_cairn_is_imported_from_the_runtime_layer() -> None:
    assert Path(cairn.__file__).resolve().parent == LIBRARY


def test_runtime_layer_holds_only_the_python_folder() -> None:
    # Lambda unpacks a layer under /opt and puts /opt/python on sys.path.
    tracked = [p for p in (ROOT / "layers" / "runtime").iterdir() if p.name != "__pycache__"]
    assert [p.name for p in tracked] == ["python"]
    assert (LIBRARY / "store" / "migrations" / "0001_initial.sql").is_file()


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_boto3_only_in_orchestration_adapters() -> None:
    offenders = [
        str(p.relative_to(LIBRARY))
        for p in LIBRARY.rglob("*.py")
        if "orchestration" not in p.parts
        and any(n.split(".")[0] in ("boto3", "botocore") for n in _imports(p))
    ]
    assert offenders == []


def test_domain_imports_nothing_from_the_layers_above() -> None:
    above = ("cairn.store", "cairn.engine", "cairn.api", "cairn.orchestration", "cairn.llm")
    offenders = [
        str(p.relative_to(LIBRARY))
        for p in (LIBRARY / "domain").rglob("*.py")
        if any(n.startswith(above) for n in _imports(p))
    ]
    assert offenders == []


def test_every_function_has_a_handler_and_nothing_imports_one() -> None:
    handlers = list((ROOT / "functions").glob("*/handler.py"))
    assert {h.parent.name for h in handlers} >= {"api", "migrate"}
    for path in LIBRARY.rglob("*.py"):
        assert not any(n.startswith("functions") for n in _imports(path)), path


def test_memory_and_tools_are_pure_logic() -> None:
    forbidden = ("cairn.store", "boto3", "botocore", "openai", "anthropic", "psycopg")
    offenders = [
        str(p.relative_to(LIBRARY))
        for package in ("memory", "tools")
        for p in (LIBRARY / package).rglob("*.py")
        if any(n.startswith(forbidden) for n in _imports(p))
    ]
    assert offenders == []
