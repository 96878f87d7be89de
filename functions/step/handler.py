"""SQS FIFO -> one agent step per message (partial batch failures), and the DLQ consumer."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.orchestration import worker
from cairn.orchestration.runtime import preload_for_snapshot, runtime

logger = Logger(service="cairn-step")
preload_for_snapshot()  # SnapStart: the providers' SDKs go into the snapshot
# A failed step holds back only its own agent's later messages, not the whole batch.
processor = SqsFifoPartialProcessor(skip_group_on_error=True)


def record_handler(record: SQSRecord) -> None:
    status = worker.run_step(runtime(), worker.parse(record.body))
    logger.info("step done", extra={"status": status, "message_id": record.message_id})


def dead_letter_record(record: SQSRecord) -> None:
    receives = int(record.attributes.approximate_receive_count or 0)
    worker.dead_letter(runtime(), worker.parse(record.body), receives)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )


@logger.inject_lambda_context(clear_state=True)
def dead_letter_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_partial_response(
        event=event, record_handler=dead_letter_record, processor=processor, context=context
    )
