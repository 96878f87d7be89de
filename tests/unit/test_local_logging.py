"""The local stack logs what Cairn does, not every HTTP request its clients make."""

from __future__ import annotations

import subprocess
import sys


def test_the_local_stack_logs_its_own_lines_and_not_each_model_request() -> None:
    # In a fresh interpreter: logging's configuration is process-wide.
    probe = (
        "import logging\n"
        "from cairn.local.__main__ import configure_logging\n"
        "configure_logging()\n"
        "print(*(logging.getLogger(n).isEnabledFor(logging.INFO)"
        " for n in ('httpx', 'httpx2', 'cairn.run')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert out == ["False", "False", "True"]
