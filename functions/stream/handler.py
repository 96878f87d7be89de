"""Lambda function URL (RESPONSE_STREAM) -> the same REST API, with streams streamed.

Run by Cairn's streaming runtime loop (cairn.adapters.aws.lambda_stream, started by
`bootstrap`), which sends the head, then each piece of the body as it comes.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from cairn.api.app import Streaming, respond
from cairn.assembly.app import build_app
from cairn.llm import deadline

logger = Logger(service="cairn-stream")
app = build_app()
# Kept for the last frames: the stream must end before the function does.
ANSWER_SECONDS = 5.0


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> Streaming:
    # The turn's steps run within what is left of this invocation (and the stream budget);
    # the worker thread that runs them takes this deadline with it.
    with deadline.within(context.get_remaining_time_in_millis() / 1000 - ANSWER_SECONDS):
        return respond(app, event, context)
