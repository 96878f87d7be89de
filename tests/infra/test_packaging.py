"""The cairn layer as synth builds it: the sources, compiled for the runtime's Python."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from cairn_infra.packaging import RUNTIME_SOURCE, build_runtime_layer, target_python


def test_the_runtime_layer_ships_the_sources_with_bytecode_for_python_312(tmp_path: Path) -> None:
    build_runtime_layer(tmp_path)
    site = tmp_path / "python"
    shipped = {p.relative_to(site) for p in site.rglob("*.py")}
    source = {p.relative_to(RUNTIME_SOURCE / "python") for p in RUNTIME_SOURCE.rglob("*.py")}
    assert shipped == source and Path("cairn/engine/step.py") in shipped
    assert (site / "cairn/store/migrations/0001_initial.sql").is_file()
    assert not list(site.glob("*.egg-info"))  # the editable install's leftovers stay home
    compiled = {p.name for p in site.rglob("__pycache__/*.pyc")}
    if target_python() is None:  # synth warns and ships sources alone
        assert compiled == set()
    else:
        assert "step.cpython-312.pyc" in compiled
        assert all(".cpython-312." in name for name in compiled)
