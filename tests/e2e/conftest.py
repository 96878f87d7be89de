"""The local stacks these tests start read the workflows' ASL from the build `make dev`
makes first; made here once, so no stack's first start waits on the CDK's synthesis."""

from __future__ import annotations

import pytest

from cairn.adapters.local import stepfunctions


@pytest.fixture(scope="session", autouse=True)
def workflow_build() -> None:
    stepfunctions.cached_definitions(**stepfunctions.STAND_INS)
