"""The console's files: served by the API itself with no key (the page asks for one), only
our own files, under a policy that lets nothing else run or load."""

from __future__ import annotations

import httpx

from tests.api.conftest import Stack


def test_the_console_is_served_without_a_key_under_a_strict_policy(stack: Stack) -> None:
    page = httpx.get(f"{stack.url}/console")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/console/app.js">' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    for name, kind in (
        ("app.js", "text/javascript"),
        ("api.js", "text/javascript"),
        ("console.css", "text/css"),
    ):
        served = httpx.get(f"{stack.url}/console/{name}")
        assert served.status_code == 200 and served.headers["content-type"].startswith(kind)


def test_only_the_consoles_own_files_are_served(stack: Stack) -> None:
    refused = (
        "/console/app.py",
        "/console/..%2Fapi%2Fapp.py",
        "/console/%2e%2e",
        "/console/index.html.bak",
        "/console/.hidden.js",
        "/console/missing.js",
    )
    for path in refused:  # not a console file: not found, or not even keyless (401)
        answer = httpx.get(f"{stack.url}{path}")
        assert answer.status_code in (401, 404), (path, answer.status_code)
    # A path shaped like the keyless ones reaches no other route without a key.
    sneaky = httpx.get(f"{stack.url}/v1/telegram/webhook/x/../../agents/")
    assert sneaky.status_code in (401, 404)


def test_the_console_holds_no_data_without_a_key(stack: Stack) -> None:
    # The page is public; everything it shows comes from the API, which still wants a key.
    assert httpx.get(f"{stack.url}/v1/agents/").status_code == 401
    keyed = httpx.get(f"{stack.url}/v1/agents/", headers={"Authorization": f"Bearer {stack.key}"})
    assert keyed.status_code == 200
