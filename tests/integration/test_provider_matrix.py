"""One step-engine matrix for every provider: each talks through its real SDK (openai,
anthropic, boto3's bedrock-runtime, google-genai) to the fake server speaking its wire
form, and a turn with a tool, parallel calls, an approval, a compaction, a failing provider
and a retried one must come out the same."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cairn.adapters.aws import bedrock
from cairn.assembly.build import engine_ports
from cairn.domain import Agent, Organization
from cairn.domain.configs import CompactionSettings, LLMConfig
from cairn.domain.messages import ApprovalDecision, Message
from cairn.domain.tool_rules import RequiresApprovalToolRule
from cairn.run.steps.compaction import DEFAULT_PROMPT
from cairn.run.steps.step import Engine
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM, Recorded, Reply, call
from tests.integration.engine_harness import (
    engine_for,
    make_agent,
    on_model,
    send,
    start_run,
    state_of,
    user,
)

PROVIDERS = {
    "openai": ("gpt-4.1-mini", "openai"),
    "anthropic": ("claude-sonnet-4-5", "anthropic"),
    "bedrock": ("anthropic.claude-sonnet-4-20250514-v1:0", "bedrock"),
    "google_ai": ("gemini-2.5-flash", "gemini"),
}


@pytest.fixture(params=list(PROVIDERS))
def provider(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "bedrock":  # the function's role signs; here any credentials do
        for name, value in (
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ):
            monkeypatch.setenv(name, value)
        bedrock.install()
    return str(request.param)


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def agent_on(
    db: Database, org: Organization, fake: FakeLLM, provider: str, **fields: object
) -> Agent:
    model, _ = PROVIDERS[provider]
    agent = make_agent(db, org, **fields)  # type: ignore[arg-type]
    config = LLMConfig(
        model=model,
        model_endpoint_type=provider,
        context_window=agent.llm_config.context_window,
        # Bedrock's endpoint is the agent's (the others come from the engine's settings).
        model_endpoint=fake.base_url if provider == "bedrock" else None,
    )
    return on_model(db, agent, config)


def engine(db: Database, fake: FakeLLM, retries: int = 0) -> Engine:
    plain = engine_for(db, fake)
    settings = plain.settings.model_copy(update={"llm_max_retries": retries})
    return Engine(db, settings, sandbox=plain.sandbox, **engine_ports(settings))


def spoke(fake: FakeLLM, provider: str) -> None:
    assert fake.requests and {r.provider for r in fake.requests} == {PROVIDERS[provider][1]}


def test_a_tool_call_then_an_answer(
    db: Database, org: Organization, fake: FakeLLM, provider: str
) -> None:
    agent = agent_on(db, org, fake, provider)
    fake.reply("", call("conversation_search", query="tea"))
    fake.reply("Nothing about tea yet.")
    turn = send(engine(db, fake), agent, "what about tea?")
    assert turn.run.status == "completed" and turn.run.stop_reason == "end_turn"
    assert turn.roles == ["user", "assistant", "tool", "assistant"]
    assert turn.new[-1].text == "Nothing about tea yet."
    assert turn.run.usage.total_tokens > 0
    spoke(fake, provider)


def test_parallel_calls_run_in_one_step(
    db: Database, org: Organization, fake: FakeLLM, provider: str
) -> None:
    agent = agent_on(db, org, fake, provider)
    fake.reply(
        "", call("conversation_search", query="tea"), call("archival_memory_search", query="milk")
    )
    fake.reply("Both looked up.")
    turn = send(engine(db, fake), agent, "tea and milk?")
    calls = turn.new[1].tool_calls or []
    assert [c.function.name for c in calls] == ["conversation_search", "archival_memory_search"]
    returns = turn.new[2].tool_returns or []
    assert [r.tool_call_id for r in returns] == [c.id for c in calls]
    assert all(r.status == "success" for r in returns) and turn.new[-1].text == "Both looked up."
    spoke(fake, provider)


def test_an_approval_holds_the_call_and_its_answer_resumes_the_turn(
    db: Database, org: Organization, fake: FakeLLM, provider: str
) -> None:
    agent = agent_on(
        db, org, fake, provider, rules=[RequiresApprovalToolRule(tool_name="core_memory_append")]
    )
    fake.reply("", call("core_memory_append", label="human", content="Likes: tea"))
    eng = engine(db, fake)
    asked = send(eng, agent, "remember I like tea")
    assert asked.run.stop_reason == "requires_approval" and asked.roles == ["user", "approval"]
    (pending,) = asked.new[1].tool_calls or []
    fake.reply("Saved!")
    approve = ApprovalDecision(tool_call_id=pending.id, approve=True)
    answer = Message(
        organization_id=org.id, agent_id=agent.id, role="approval", approvals=[approve]
    )
    resumed = send(eng, agent, answer)
    assert resumed.run.stop_reason == "end_turn" and resumed.new[-1].text == "Saved!"
    assert state_of(db, agent)[1]["human"] == "Name: Ada\nLikes: tea"
    spoke(fake, provider)


def test_an_overfull_context_is_summarised_by_the_same_provider(
    db: Database, org: Organization, fake: FakeLLM, provider: str
) -> None:
    def summarising(r: Recorded) -> bool:
        return r.system_text() == DEFAULT_PROMPT

    fake.when(summarising, Reply(text="Ada likes tea; asked about trains."))
    fake.when(lambda r: True, Reply(text="ok"))  # usage: the fake counts the request
    agent = agent_on(
        db,
        org,
        fake,
        provider,
        context_window=4096,
        compaction_settings=CompactionSettings(mode="sliding_window"),
    )
    eng = engine(db, fake)
    for n in range(4):
        send(eng, agent, f"turn {n}: " + "words about trains " * 250)
    assert [r for r in fake.requests if summarising(r)], "a compaction step asked for a summary"
    _, _, context = state_of(db, agent)
    assert "Ada likes tea; asked about trains." in context[1].text
    spoke(fake, provider)


def test_a_refused_request_fails_the_run_with_the_providers_reason(
    db: Database, org: Organization, fake: FakeLLM, provider: str
) -> None:
    agent = agent_on(db, org, fake, provider)
    fake.fail(400, "that model does not take tools")
    turn = send(engine(db, fake, retries=2), agent, "hello")
    assert turn.run.status == "failed" and turn.run.stop_reason == "llm_api_error"
    assert (turn.run.error or {}).get("type") == "bad_request"
    assert "that model does not take tools" in str((turn.run.error or {}).get("message"))
    assert len(fake.requests) == 1  # a bad request is not asked again
    spoke(fake, provider)


def test_a_server_error_is_retried_and_the_turn_goes_on(
    db: Database, org: Organization, fake: FakeLLM, provider: str
) -> None:
    agent = agent_on(db, org, fake, provider)
    fake.fail(503, "overloaded")
    fake.reply("Back again.")
    turn = send(engine(db, fake, retries=2), agent, "hello")
    assert turn.run.status == "completed" and turn.new[-1].text == "Back again."
    assert len(fake.requests) == 2  # the SDK asked again
    spoke(fake, provider)


def test_the_answer_streams_in_pieces_that_add_up_to_the_stored_message(
    db: Database, org: Organization, fake: FakeLLM, provider: str
) -> None:
    agent = agent_on(db, org, fake, provider)
    fake.reply("Steeping now; ready in three minutes.", chunk_delay=0.01)
    eng = engine(db, fake)
    run, *_ = start_run(eng, org.id, agent.id, [user(agent, "tea?")])
    pieces: list[tuple[str, str]] = []
    outcome = eng.step(org.id, run.id, 0, on_delta=lambda mid, d: pieces.append((mid, d.text)))
    (said,) = [m for m in outcome.messages if m.role == "assistant"]
    assert len(pieces) > 3 and {mid for mid, _ in pieces} == {said.id}
    assert (
        "".join(text for _, text in pieces) == said.text == "Steeping now; ready in three minutes."
    )
    spoke(fake, provider)
