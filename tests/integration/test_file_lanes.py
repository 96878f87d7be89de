"""Files' jobs share their organization's lanes of the files queue (domain/runs.py
file_job_command): one tenant's bulk upload never queues another's files behind its own."""

from __future__ import annotations

import json


def test_one_organizations_bulk_upload_takes_two_workers_and_queues_no_one_else() -> None:
    """Files' jobs on the FIFO files queue (the local one, with SQS's group semantics): one
    organization's 50 files share two message groups, so with three workers free the third
    takes the other organization's file, sent last, instead of the bulk's third."""
    import threading

    from cairn.adapters.local.queue import LocalQueue, LocalStepQueue
    from cairn.domain.ids import new_id
    from cairn.domain.runs import file_job_command

    queue = LocalQueue("files.fifo")
    port = LocalStepQueue(queue, retry_seconds=1)
    bulk, other = new_id("org"), new_id("org")
    for _ in range(50):
        port.publish(file_job_command(bulk, new_id("file")))
    port.publish(file_job_command(other, new_id("file")))
    stop = threading.Event()
    taken = [queue.receive(stop) for _ in range(3)]
    orgs = [json.loads(m.body)["organization_id"] for m in taken if m is not None]
    assert orgs.count(bulk) == 2 and orgs[-1] == other, orgs
