"""Provider faults as documented (CAIRN_LLM_MAX_RETRIES): 429, 5xx and timeouts are asked
again with backoff, also under a sync send's deadline, where the SDKs do not retry."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from letta_client import APIStatusError

from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


@pytest.fixture
def retrying(db: Database) -> Iterator[Stack]:
    with make_stack(db, llm_max_retries=2) as made:
        yield made


@pytest.mark.parametrize("status", [500, 429, 503])
def test_a_single_fault_followed_by_success_completes_the_run(retrying: Stack, status: int) -> None:
    client = retrying.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    retrying.fake.fail(status).reply("Fine now.")
    answer = client.agents.messages.create(agent.id, input="hello")
    assert answer.stop_reason.stop_reason == "end_turn"
    assert answer.messages[-1].content == "Fine now."
    assert len(retrying.fake.requests) == 2


def test_faults_past_the_retries_fail_the_run_after_exactly_that_many_calls(
    retrying: Stack,
) -> None:
    client = retrying.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    retrying.fake.fail(500, times=3).reply("never asked")
    with pytest.raises(APIStatusError) as err:  # a failed sync send: Letta's 502 error body
        client.agents.messages.create(agent.id, input="hello")
    assert err.value.status_code == 502 and "scripted failure" in str(err.value.body)
    assert len(retrying.fake.requests) == 3  # the first call and two retries


def test_a_bad_request_is_not_retried(retrying: Stack) -> None:
    client = retrying.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    retrying.fake.fail(400).reply("never asked")
    with pytest.raises(APIStatusError):
        client.agents.messages.create(agent.id, input="hello")
    assert len(retrying.fake.requests) == 1
