"""CDK entry point (see cdk.json). The stacks are added with the deployment work."""

from __future__ import annotations

import aws_cdk as cdk

app = cdk.App()
app.synth()
