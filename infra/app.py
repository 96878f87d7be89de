"""CDK entry point (see cdk.json): `make synth`, `cdk deploy`.

Context flags: `dev=true` relaxes what protects production data (deletion protection,
retention, a second NAT gateway and database reader); `skip_bundling=true` synthesises
without building the dependency layer (tests); `approval_timeout_hours` (default 168);
`tool_network=true` adds the egress proxy for tools (README "The tool sandbox").
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk

from cairn_infra.app import build_app

app = cdk.App()
build_app(app)
app.synth()
