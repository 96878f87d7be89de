"""Scheduled messages: made by a client (the API) or by the agent (its tool), fired by the
sweeper's round (locally) or one occurrence at a time (EventBridge Scheduler on AWS, moto
here), each occurrence starting its run once however often it is delivered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import httpx
import pytest
from moto import mock_aws

from cairn.adapters.aws.scheduler import EventBridgeScheduler, eventbridge_expression
from cairn.domain.schedules import Schedule
from cairn.run.driving.schedules import fire_due, fire_one
from cairn.store import runs, schedules
from tests.api.conftest import Stack
from tests.api.test_agent_messages import stack_other_org_client
from tests.fakes.llm_server import call
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def api(stack: Stack) -> httpx.Client:
    return httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=30
    )


def scheduled_runs(stack: Stack, agent_id: str) -> list[Any]:
    with stack.runtime.db.connection() as conn:
        found = runs.list_runs(conn, stack.org_id, agent_ids=[agent_id])
    return [r for r in found if r.metadata.get("run_type") == "scheduled_message"]


def test_a_one_time_message_fires_once_as_a_turn_of_its_own(stack: Stack) -> None:
    client, http = stack.client(), api(stack)
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    at = datetime.now(UTC) + timedelta(hours=1)
    body = {"input": "Remind Ada about the trail.", "run_at": at.isoformat()}
    made = http.post(f"/v1/agents/{agent.id}/schedules", json=body).json()
    assert made["id"].startswith("schedule-") and made["schedule"]["type"] == "one-time"
    assert [s["id"] for s in http.get(f"/v1/agents/{agent.id}/schedules").json()] == [made["id"]]
    assert fire_due(stack.runtime, now=datetime.now(UTC)) == 0  # not yet
    stack.fake.reply("Ada, remember the trail!")
    assert fire_due(stack.runtime, now=at + timedelta(seconds=1)) == 1
    eventually(lambda: any(r.status == "completed" for r in scheduled_runs(stack, agent.id)))
    assert fire_due(stack.runtime, now=at + timedelta(days=1)) == 0  # done: fires once
    [run] = scheduled_runs(stack, agent.id)
    assert stack.fake.requests[-1].last_text().endswith("Remind Ada about the trail.")
    # fired, it is gone (as Letta's one-off reminders, and EventBridge's at() schedule):
    # its run keeps the schedule's id
    assert http.get(f"/v1/agents/{agent.id}/schedules/{made['id']}").status_code == 404
    assert http.get(f"/v1/agents/{agent.id}/schedules").json() == []
    assert run.metadata["schedule_id"] == made["id"]
    assert fire_one(stack.runtime, stack.org_id, made["id"], at) is False  # a late delivery


def test_a_recurring_message_moves_on_and_a_repeated_delivery_starts_nothing(
    stack: Stack,
) -> None:
    client, http = stack.client(), api(stack)
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    made = http.post(
        f"/v1/agents/{agent.id}/schedules",
        json={
            "messages": [{"role": "user", "content": "Daily check-in."}],
            "cron": "30 8 * * 1-5",
            "timezone": "Europe/Lisbon",
        },
    ).json()
    first = datetime.fromisoformat(made["next_run_at"])
    local = first.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Lisbon"))
    assert (local.hour, local.minute) == (8, 30) and local.weekday() < 5
    stack.fake.reply("Checking in.")
    assert fire_one(stack.runtime, stack.org_id, made["id"], first)  # EventBridge, on time
    assert not fire_one(stack.runtime, stack.org_id, made["id"], first)  # its retry
    assert fire_due(stack.runtime, now=first + timedelta(seconds=5)) == 0  # the sweeper after
    eventually(lambda: any(r.status == "completed" for r in scheduled_runs(stack, agent.id)))
    after = http.get(f"/v1/agents/{agent.id}/schedules/{made['id']}").json()
    assert datetime.fromisoformat(after["next_run_at"]) > first
    assert len(scheduled_runs(stack, agent.id)) == 1
    assert http.delete(f"/v1/agents/{agent.id}/schedules/{made['id']}").status_code == 204
    assert http.get(f"/v1/agents/{agent.id}/schedules/{made['id']}").status_code == 404


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"input": "x"}, "one of `run_at`"),
        ({"input": "x", "cron": "* * * * *", "run_at": "2030-01-01T00:00:00Z"}, "one of"),
        ({"input": "x", "cron": "every day"}, "five-field cron"),
        ({"input": "x", "cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "IANA timezone"),
        ({"input": "x", "run_at": "2020-01-01T00:00:00Z"}, "in the past"),
        ({"input": " ", "cron": "0 9 * * *"}, "empty"),
        ({"input": "x" * 10_001, "cron": "* * * * *"}, "message: 10001 characters"),
    ],
)
def test_bad_schedules_are_400s_naming_the_field(
    stack: Stack, body: dict[str, Any], says: str
) -> None:
    agent = stack.client().agents.create(llm_config=LLM)  # type: ignore[arg-type]
    answer = api(stack).post(f"/v1/agents/{agent.id}/schedules", json=body)
    assert answer.status_code == 400 and says in answer.text, answer.text


def test_an_agent_has_at_most_its_cap_of_schedules_by_the_api_or_its_tool(stack: Stack) -> None:
    """300 schedules were taken in half a second: each still to fire is a turn of the
    operator's model to come. Past the cap (CAIRN_AGENT_MAX_SCHEDULES, 50) a 400 naming it;
    its own tool is told the same; another agent keeps its own room."""
    client = stack.client()
    agent = client.agents.create(llm_config=LLM, tools=["schedule_message"])  # type: ignore[arg-type]
    http = api(stack)
    for n in range(50):
        made = http.post(
            f"/v1/agents/{agent.id}/schedules", json={"input": f"m{n}", "cron": "0 9 * * *"}
        )
        assert made.status_code in (200, 201), made.text
    refused = http.post(
        f"/v1/agents/{agent.id}/schedules", json={"input": "one more", "cron": "0 9 * * *"}
    )
    assert refused.status_code == 400 and "CAIRN_AGENT_MAX_SCHEDULES" in refused.text
    assert refused.json()["detail"].startswith("schedule: the agent has 50")
    at = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    stack.fake.reply("", call("schedule_message", message="later", run_at=at.isoformat()))
    stack.fake.reply("Could not.")
    said = client.agents.messages.create(agent.id, input="remind me")
    returned = next(m for m in said.messages if m.message_type == "tool_return_message")
    assert returned.status == "error" and "limit of 50" in returned.tool_return
    with stack.runtime.db.connection() as conn:
        assert len(schedules.of_agent(conn, stack.org_id, agent.id, after=None, limit=100)) == 50
    other = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    theirs = http.post(f"/v1/agents/{other.id}/schedules", json={"input": "x", "cron": "0 9 * * *"})
    assert theirs.status_code in (200, 201)


def test_a_round_fires_at_most_its_share_of_one_organizations_due_schedules(
    stack: Stack,
) -> None:
    """One organization's 30 due schedules and another's one: a round fires the other's and
    20 of the first's (CAIRN_ORG_SCHEDULES_PER_ROUND), the earliest; the next round the rest."""
    client = stack.client()
    busy = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    theirs = stack_other_org_client(stack)
    quiet = theirs.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    at = (datetime.now(UTC) + timedelta(minutes=5)).replace(microsecond=0)
    http = api(stack)
    for n in range(30):
        when = (at + timedelta(seconds=n)).isoformat()
        made = http.post(f"/v1/agents/{busy.id}/schedules", json={"input": f"m{n}", "run_at": when})
        assert made.status_code in (200, 201), made.text
    other = httpx.post(
        f"{stack.url}/v1/agents/{quiet.id}/schedules",
        timeout=30,
        headers={"Authorization": f"Bearer {theirs.api_key}"},
        json={"input": "q", "run_at": (at + timedelta(seconds=40)).isoformat()},
    )
    assert other.status_code in (200, 201), other.text
    later = at + timedelta(minutes=1)
    assert fire_due(stack.runtime, now=later) == 21
    assert len(scheduled_runs(stack, busy.id)) == 20
    with stack.runtime.db.connection() as conn:
        fired = runs.list_runs(conn, theirs_org(stack, quiet.id), agent_ids=[quiet.id])
    assert len(fired) == 1
    assert fire_due(stack.runtime, now=later) == 10
    assert len(scheduled_runs(stack, busy.id)) == 30


def theirs_org(stack: Stack, agent_id: str) -> str:
    with stack.runtime.db.connection() as conn:
        row = conn.execute("SELECT organization_id FROM agents WHERE id = %s", (agent_id,))
        found = row.fetchone()
    assert found is not None
    return str(found["organization_id"])


def test_another_organization_cannot_schedule_or_see_them(stack: Stack) -> None:
    agent = stack.client().agents.create(llm_config=LLM)  # type: ignore[arg-type]
    made = (
        api(stack)
        .post(f"/v1/agents/{agent.id}/schedules", json={"input": "x", "cron": "0 9 * * *"})
        .json()
    )
    theirs = stack_other_org_client(stack)
    other = httpx.Client(
        base_url=stack.url, timeout=30, headers={"Authorization": f"Bearer {theirs.api_key}"}
    )
    assert (
        other.post(
            f"/v1/agents/{agent.id}/schedules", json={"input": "x", "cron": "0 9 * * *"}
        ).status_code
        == 404
    )
    assert other.get(f"/v1/agents/{agent.id}/schedules/{made['id']}").status_code == 404
    assert other.delete(f"/v1/agents/{agent.id}/schedules/{made['id']}").status_code == 404


def test_an_agent_schedules_a_message_to_itself_once_per_call(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM, tools=["schedule_message"])  # type: ignore[arg-type]
    at = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    stack.fake.reply(
        "", call("schedule_message", message="Ask Ada how the hike went.", run_at=at.isoformat())
    )
    stack.fake.reply("I will ask tomorrow.")
    response = client.agents.messages.create(agent.id, input="I hike tomorrow.")
    returned = next(m for m in response.messages if m.message_type == "tool_return_message")
    assert returned.status == "success" and "Scheduled (schedule-" in returned.tool_return
    with stack.runtime.db.connection() as conn:
        made = schedules.of_agent(conn, stack.org_id, agent.id, after=None, limit=10)
    assert len(made) == 1 and made[0].next_run_at == at
    assert made[0].messages == [{"role": "user", "content": "Ask Ada how the hike went."}]


def test_eventbridge_scheduler_gets_each_schedule_in_its_own_terms() -> None:
    def schedule(**fields: Any) -> Schedule:
        return Schedule(
            organization_id="org-00000000-0000-4000-8000-000000000000",
            agent_id="agent-00000000-0000-4000-8000-000000000000",
            messages=[{"role": "user", "content": "x"}],
            **fields,
        )

    once = schedule(kind="once", run_at=datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC))
    weekdays = schedule(kind="cron", cron="30 8 * * 1-5", timezone="Europe/Lisbon")
    monthly = schedule(kind="cron", cron="0 9 1 * *")
    assert eventbridge_expression(once) == "at(2030-01-02T03:04:05)"
    assert eventbridge_expression(weekdays) == "cron(30 8 ? * MON-FRI *)"
    assert eventbridge_expression(monthly) == "cron(0 9 1 * ? *)"
    assert eventbridge_expression(schedule(kind="cron", cron="0 9 1 * 1")) is None  # sweeper's
    with mock_aws():
        client = boto3.client("scheduler", region_name="us-east-1")
        client.create_schedule_group(Name="cairn")
        target = EventBridgeScheduler(
            "cairn",
            "arn:aws:lambda:us-east-1:123456789012:function:s",
            "arn:aws:iam::123456789012:role/r",
            client,
        )
        assert target.put(weekdays) and target.put(once)
        made = client.get_schedule(Name=weekdays.id, GroupName="cairn")
        assert made["ScheduleExpression"] == "cron(30 8 ? * MON-FRI *)"
        assert made["ScheduleExpressionTimezone"] == "Europe/Lisbon"
        assert '"occurrence": "<aws.scheduler.scheduled-time>"' in made["Target"]["Input"]
        target.remove(weekdays.id)
        target.remove(weekdays.id)  # gone already: no error
        names = [s["Name"] for s in client.list_schedules(GroupName="cairn")["Schedules"]]
        assert names == [once.id]
