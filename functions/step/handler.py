"""SQS FIFO -> one agent step (or embedding job) per message (partial batch failures), and
the DLQ consumer."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import (
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn import tracing
from cairn.assembly.build import preload_for_snapshot, runtime
from cairn.llm import deadline
from cairn.run import later
from cairn.run.driving import worker
from cairn.run.runtime import Runtime

logger = Logger(service="cairn-step")
preload_for_snapshot()  # SnapStart: the providers' SDKs go into the snapshot
# A failed step holds back only its own agent's later messages, not the whole batch.
processor = SqsFifoPartialProcessor(skip_group_on_error=True)
# A batch (of one) whose every record failed answers with its failures like any other,
# rather than as a function error: the record comes back after its backoff either way, and
# function errors stay for what really broke the function (alarms count them).
processor.raise_on_entire_batch_failure = False
# Kept for writing a step's checkpoint after its model call and tools.
CHECKPOINT_SECONDS = 10.0


def record_handler(record: SQSRecord, lambda_context: LambdaContext) -> None:
    rt = runtime()
    # The model must answer in time for the tools and the checkpoint to fit in what is
    # left of this invocation; past that the step comes back in a later delivery.
    seconds = lambda_context.get_remaining_time_in_millis() / 1000
    try:
        with deadline.within(seconds - rt.settings.tool_timeout_seconds - CHECKPOINT_SECONDS):
            status = worker.run_message(rt, record.body, _receives(record))
    except Exception:
        # The cause, once: the batch processor reports the record failed but not why.
        logger.exception("step raised", extra={"message_id": record.message_id})
        _back_off(rt, record)
        raise  # reported as this record's failure: it comes back after the backoff
    logger.info("step done", extra={"status": status, "message_id": record.message_id})


def _back_off(rt: Runtime, record: SQSRecord) -> None:
    retry_after = getattr(rt.queue.steps, "retry_after", None)  # SQS's, or the local stack's
    if retry_after is None:
        return
    try:
        delay = retry_after(record.receipt_handle, _receives(record))
    except Exception:  # the queue's own visibility timeout still brings it back
        logger.exception("could not shorten the retry delay", extra={"id": record.message_id})
        return
    logger.warning("step failed; retried in %s s", delay, extra={"message_id": record.message_id})


def dead_letter_record(record: SQSRecord) -> None:
    status = worker.dead_letter(runtime(), record.body, _receives(record))
    logger.info("dead letter handled", extra={"status": status, "message_id": record.message_id})


def _receives(record: SQSRecord) -> int:
    return int(record.attributes.approximate_receive_count or 0)


@logger.inject_lambda_context(clear_state=True)
@tracing.flushed
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    """Records of the step queue and of the embedding jobs' queue."""
    answer = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    later.settle()  # the embedding jobs its steps handed over, published before it answers
    return answer


@logger.inject_lambda_context(clear_state=True)
def dead_letter_handler(
    event: dict[str, Any], context: LambdaContext
) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=dead_letter_record, processor=processor, context=context
    )
