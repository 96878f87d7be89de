"""Schemathesis over the API's own /openapi.json, against the local stack, authorised.

A bounded number of generated requests per operation (valid ones and ones that break the
schema); none may answer 5xx, and every success and client error must have a status the
served schema declares for the route and fit it (Letta's shapes; its error body for 4xx).
The fake LLM answers every model call with a short text, so sends complete.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.api.conftest import Stack
from tests.fakes.llm_server import Recorded, Reply, call

EXAMPLES = int(os.environ.get("CAIRN_SCHEMATHESIS_EXAMPLES", "12"))


def writes_the_tool(request: Recorded) -> Reply:
    name = request.last_text().split("named ", 1)[1].split(" ", 1)[0]
    source = f'def {name}() -> str:\n    """Say hello."""\n    return "hello"\n'
    sample = {"raw_source_code": source, "sample_args_json": "{}", "pip_requirements_json": "{}"}
    return Reply(tool_calls=[call("generate_tool", **sample)])


def test_no_generated_request_gets_a_server_error(stack: Stack) -> None:
    # A model asked to write a tool (tools/generate-tool) writes one, named as it was asked.
    stack.fake.when(lambda r: r.tool_names == ["generate_tool"], writes_the_tool)
    stack.fake.when(lambda _: True, Reply(text="ok"))
    schema = schemathesis.openapi.from_url(f"{stack.url}/openapi.json")
    headers = {"Authorization": f"Bearer {stack.key}"}
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 70

    for operation in operations:

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def run(case: schemathesis.Case) -> None:
            response = case.call(base_url=stack.url, headers=headers, timeout=30)
            statuses[response.status_code] += 1
            # Every answer the schema declares is held to it: successes to Letta's shapes,
            # 422s to FastAPI's list of errors (Letta's), whatever raised them.
            checks = [not_a_server_error, response_schema_conformance]
            try:
                case.validate_response(response, checks=checks)
            except Exception as err:
                failures.append(f"{case.method} {case.formatted_path}: {str(err)[:400]}")
                raise
            # The conformance check passes an answer whose status the schema has no entry
            # for; here every success and client error must have one (4XX: Letta's error).
            code = response.status_code
            if (200 <= code < 300 or 400 <= code < 500) and (
                case.operation.responses.find_by_status_code(code) is None
            ):
                failures.append(f"{case.method} {case.formatted_path}: {code} is undeclared")

        with contextlib.suppress(Exception):  # each failure is in `failures`
            run()
    assert failures == [], "\n".join(failures)
    # The requests reached the routes: authorised, and many of them valid.
    assert statuses[401] == 0 and sum(n for s, n in statuses.items() if s < 300) > 50, statuses
    # Client errors of many kinds were read and held to the error shape too.
    assert {400, 404, 422} <= set(statuses), statuses
