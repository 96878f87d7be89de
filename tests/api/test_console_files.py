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
    # The path is decoded before routing (as API Gateway hands it over): encoded slashes
    # and dots reach no other route either.
    for sneaky in (
        "/v1/telegram/webhook/x/../../agents/",
        "/v1/telegram/webhook/x%2F..%2F..%2Fagents%2F",
        "/console/%2E%2E%2Fv1%2Fagents%2F",
    ):
        assert httpx.get(f"{stack.url}{sneaky}").status_code in (401, 404), sneaky


def test_the_console_holds_no_data_without_a_key(stack: Stack) -> None:
    # The page is public; everything it shows comes from the API, which still wants a key.
    assert httpx.get(f"{stack.url}/v1/agents/").status_code == 401
    keyed = httpx.get(f"{stack.url}/v1/agents/", headers={"Authorization": f"Bearer {stack.key}"})
    assert keyed.status_code == 200


def test_an_unchanged_file_is_answered_304_by_its_etag(stack: Stack) -> None:
    """Each load asks again (no-cache) and an unchanged file costs no bytes: its ETag is a
    hash of it, and a request naming it is answered 304, with the policy still on."""
    first = httpx.get(f"{stack.url}/console/app.js")
    tag = first.headers["etag"]
    assert (
        first.status_code == 200
        and tag.startswith('"')
        and first.headers["cache-control"] == "no-cache"
    )
    again = httpx.get(f"{stack.url}/console/app.js", headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    assert "default-src 'none'" in again.headers["content-security-policy"]
    listed = httpx.get(f"{stack.url}/console/app.js", headers={"If-None-Match": f'"x", W/{tag}'})
    assert listed.status_code == 304
    # Another file's tag, or a stale one, gets the file.
    css = httpx.get(f"{stack.url}/console/console.css", headers={"If-None-Match": tag})
    assert css.status_code == 200 and css.headers["etag"] != tag and "body" in css.text
    page = httpx.get(f"{stack.url}/console", headers={"If-None-Match": '"stale"'})
    assert page.status_code == 200 and "<html" in page.text


def test_the_page_preloads_every_module_it_imports() -> None:
    """index.html asks for every module at once (modulepreload), so the browser need not
    find them import by import; a module added without its line would load late."""
    import re
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "layers/runtime/python/cairn/console"
    page = (folder / "index.html").read_text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="/console/([\w-]+\.js)">', page))
    imported = {
        name
        for js in folder.glob("*.js")
        for name in re.findall(r'from "\./([\w-]+\.js)"', js.read_text())
    }
    assert imported and preloaded == imported
