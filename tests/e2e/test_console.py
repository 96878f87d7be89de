"""The console in a real headless browser (Debian's Chromium through its chromedriver)
against the local stack with the fake model: sign in, create an agent, chat with the
answer streaming in, edit a block (and meet someone else's edit), approve a tool call, open
a run; axe-core finds no serious accessibility violation on any page, and the keyboard
alone signs in. Screenshots of each page go to build/console-screenshots/ (not committed),
with the render times of an agent of 1,000 messages (docs/numbers.md reports them)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_local_stack import free_port, wait_for_health
from tests.fakes.llm_server import FakeLLM, Recorded, Reply, call
from tests.fakes.mcp_server import mcp_server
from tests.fakes.telegram_api import BOT_USERNAME, FakeTelegram
from tests.fakes.telegram_api import TOKEN as BOT_TOKEN
from tests.integration.test_images import PNG

KEY = "sk-cairn-console-test"
SHOTS = Path(__file__).resolve().parents[2] / "build" / "console-screenshots"
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
STREAMED = ["Hello ", "from ", "the ", "trail, ", "step ", "by ", "step."]


def answer(request: Recorded) -> Reply:
    last = request.last_text()
    if request.body["messages"][-1]["role"] == "tool":
        return Reply(text="Filed it.")
    if last.startswith("quick"):  # many runs, made fast
        return Reply(text="ok")
    if "file this" in last:
        return Reply(
            tool_calls=[call("memory_insert", label="human", new_str="The north trail is closed.")]
        )
    # Piece by piece, slowly enough that the page shows the answer before it is whole.
    return Reply(text="".join(STREAMED), chunk_delay=0.25)


@pytest.fixture(scope="module")
def telegram_api() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, telegram_api: FakeTelegram
) -> Iterator[tuple[str, FakeLLM]]:
    folder = tmp_path_factory.mktemp("console")
    with FakeLLM() as fake:
        fake.when(lambda _: True, answer)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env.update(
            CAIRN_DATA_DIR=str(folder / "data"),
            CAIRN_PORT=str(port),
            CAIRN_API_KEY=KEY,
            OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=f"{fake.base_url}/v1",
            CAIRN_LLM_MAX_RETRIES="0",
            CAIRN_PROVIDER_TRACES="true",
            # The test's MCP server listens on loopback, which a tenant may not reach.
            CAIRN_OUTBOUND_NETWORKS="127.0.0.0/8",
            CAIRN_TELEGRAM_API_URL=telegram_api.base_url,
        )
        with open(folder / "stack.log", "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "cairn.local"], env=env, stdout=log, stderr=log
            )
        try:
            wait_for_health(port, proc, timeout=180)  # type: ignore[arg-type]
            yield f"http://127.0.0.1:{port}", fake
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM and DRIVER, "make test installs Debian's chromium and chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
        "--disable-gpu",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    driver.set_page_load_timeout(60)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


def api(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)


def until(driver: Any, check: Callable[[Any], Any], timeout: float = 60) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.wait import WebDriverWait

    # A page drawn again meanwhile leaves elements behind: look again.
    return WebDriverWait(
        driver, timeout, poll_frequency=0.05, ignored_exceptions=[StaleElementReferenceException]
    ).until(check)


def page_is(driver: Any, name: str) -> None:
    until(driver, lambda d: d.execute_script("return document.body.dataset.page") == name)


def shot(driver: Any, name: str) -> None:
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


def accessible(driver: Any, page: str) -> None:
    """axe-core's serious and critical findings on the page as it is: none."""
    from axe_selenium_python import Axe

    axe = Axe(driver)
    axe.inject()
    found = axe.run()
    bad = [
        (v["id"], v["help"], [n["target"] for n in v["nodes"]][:3])
        for v in found["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert bad == [], f"{page}: {bad}"


def by_css(driver: Any, selector: str) -> Any:
    return driver.find_element("css selector", selector)


def labelled(driver: Any, label: str) -> Any:
    """The form control a visible label names (as a person finds it)."""
    found = label_of(driver, label)
    assert found is not None, f"no label {label!r}"
    return found


def value_of(driver: Any, label: str) -> str:
    """What the labelled control holds now ("" while the page has not drawn it)."""
    found = label_of(driver, label)
    return str(found.get_attribute("value") or "") if found is not None else ""


def label_of(driver: Any, label: str) -> Any:
    """The control the label names, or None while the page has not drawn it. Found in one
    script, label and control together: a pane drawn again between two lookups (the
    workspace's memory after a turn) gives its controls new ids."""
    return driver.execute_script(
        "const l = [...document.querySelectorAll('label')].find(l => l.textContent.trim() === "
        "arguments[0]); return l ? document.getElementById(l.htmlFor) : null",
        label,
    )


def button(driver: Any, text: str) -> Any:
    """The button a person would press: shown, enabled, by its words."""
    return until(
        driver,
        lambda d: next(
            (
                b
                for b in d.find_elements("tag name", "button")
                if b.text.strip() == text and b.is_displayed() and b.is_enabled()
            ),
            None,
        ),
    )


def press(driver: Any, text: str) -> None:
    """Find the button and click it, again if the page was drawn anew in between (a search
    whose answer replaces the list the button was found in)."""

    def attempt(d: Any) -> bool:
        found = next(
            (
                b
                for b in d.find_elements("tag name", "button")
                if b.text.strip() == text and b.is_displayed() and b.is_enabled()
            ),
            None,
        )
        if found is None:
            return False
        found.click()
        return True

    until(driver, attempt)


def test_the_console_end_to_end(stack: tuple[str, FakeLLM], browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    url, fake = stack
    d = browser
    d.get(f"{url}/console")
    page_is(d, "sign-in")
    accessible(d, "sign-in")
    shot(d, "1-sign-in")
    # A wrong key is refused where the key is typed.
    labelled(d, "API key").send_keys("sk-wrong" + Keys.ENTER)
    until(d, lambda d: "refused" in by_css(d, "[role=alert]").text)
    # The keyboard alone: Tab from the top to the key field, type, Enter.
    d.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
    body = by_css(d, "body")
    body.send_keys(Keys.TAB)
    for _ in range(8):
        if d.switch_to.active_element.get_attribute("type") == "password":
            break
        d.switch_to.active_element.send_keys(Keys.TAB)
    assert d.switch_to.active_element.get_attribute("type") == "password"
    d.switch_to.active_element.send_keys(KEY + Keys.ENTER)
    page_is(d, "agents")
    assert d.execute_script("return sessionStorage.getItem('cairn.console.key')") == KEY
    assert d.execute_script("return localStorage.length") == 0  # never kept past the tab

    # Search by name and tag, and delete from the list (after a confirmation).
    http = api(url)
    http.post(
        "/v1/agents/", json={"name": "Old scout", "model": "openai/gpt-test", "tags": ["retired"]}
    )
    d.refresh()
    page_is(d, "agents")
    labelled(d, "Tag").send_keys("retired" + Keys.ENTER)
    until(
        d,
        lambda d: (
            [a.text for a in d.find_elements("css selector", "main table a")] == ["Old scout"]
        ),
    )
    press(d, "Delete")
    d.switch_to.alert.accept()
    until(d, lambda d: "No agents match." in d.page_source)
    assert http.get("/v1/agents/", params={"name": "Old scout"}).json() == []
    d.get(f"{url}/console#/")
    page_is(d, "agents")

    # Create an agent from the form.
    labelled(d, "Name").send_keys("Trail guide")
    model = labelled(d, "Model")
    model.clear()
    model.send_keys("openai/gpt-test")
    button(d, "Create agent").click()
    page_is(d, "agent")
    agent_id = d.current_url.rsplit("/", 1)[-1]
    accessible(d, "agent")
    shot(d, "2-agent")
    assert "Context window" in d.page_source and "Core memory" in d.page_source

    # Edit a block in place; then someone else edits it first: the conflict is shown.
    persona = labelled(d, "Block “persona”")
    persona.clear()
    persona.send_keys("I guide hikers on the north ridge.")
    assert "34 of" in by_css(d, f"#{persona.get_attribute('aria-describedby')}").text
    button(d, "Save persona").click()
    until(d, lambda d: "Saved" in d.page_source)
    block = http.get(f"/v1/agents/{agent_id}/core-memory/blocks/persona").json()
    assert block["value"] == "I guide hikers on the north ridge."
    http.patch(
        f"/v1/agents/{agent_id}/core-memory/blocks/persona", json={"value": "Edited elsewhere."}
    )
    persona.send_keys(" Mine.")
    button(d, "Save persona").click()
    conflict = until(
        d, lambda d: next((e for e in d.find_elements("css selector", ".conflict")), None)
    )
    assert (
        "Someone else changed this block" in conflict.text and "Edited elsewhere." in conflict.text
    )
    shot(d, "3-block-conflict")
    button(d, "Save mine over theirs").click()
    until(
        d,
        lambda d: (
            http.get(f"/v1/agents/{agent_id}/core-memory/blocks/persona")
            .json()["value"]
            .endswith("Mine.")
        ),
    )

    # Archival passages, searched from the page.
    http.post(f"/v1/agents/{agent_id}/archival-memory", json={"text": "Water at the second cairn."})
    http.post(f"/v1/agents/{agent_id}/archival-memory", json={"text": "Camp below the pass."})
    d.refresh()
    page_is(d, "agent")
    labelled(d, "Search passages").send_keys("water" + Keys.ENTER)
    until(
        d,
        lambda d: (
            "Water at the second cairn." in by_css(d, "[aria-labelledby=archival]").text
            and "Camp below" not in by_css(d, "[aria-labelledby=archival]").text
        ),
    )

    # Chat: the answer streams in, piece by piece.
    d.get(f"{url}/console#/agents/{agent_id}/chat")
    page_is(d, "chat")
    accessible(d, "chat")
    picture = tmp_path / "ridge.png"
    picture.write_bytes(PNG)
    labelled(d, "Message").send_keys("hello there")
    labelled(d, "Attach an image").send_keys(str(picture))
    button(d, "Send").click()
    seen: list[str] = []

    def grown(d: Any) -> bool:
        shown = d.execute_script(
            "return [...document.querySelectorAll('li.assistant_message .content')].map(e => "
            "e.textContent).pop() || ''"
        )
        if shown and (not seen or seen[-1] != shown):
            seen.append(shown)
        return shown == "".join(STREAMED)

    until(d, grown)
    assert len(seen) >= 3 and seen[0] != seen[-1], seen  # shown before it was whole
    until(d, lambda d: "Stopped: end_turn" in d.page_source)  # the turn committed
    shot(d, "4-chat")
    sent = fake.requests[-1].body["messages"][-1]["content"]  # the image reached the model
    assert any(p.get("type") == "image_url" for p in sent), sent
    assert d.find_elements("css selector", "li.user_message img.attached")

    # An approval: the agent's call waits; Approve runs it and the turn goes on.
    http.patch(
        f"/v1/agents/{agent_id}/tools/approval/memory_insert", params={"requires_approval": True}
    )
    labelled(d, "Message").send_keys("please file this")
    button(d, "Send").click()
    approve = button(d, "Approve memory_insert")
    shot(d, "5-approval")
    approve.click()
    until(d, lambda d: "Filed it." in d.page_source)
    human = http.get(f"/v1/agents/{agent_id}/core-memory/blocks/human").json()
    assert "The north trail is closed." in human["value"]

    # Runs: the agent's list, then one run's steps as a timeline with its request.
    d.get(f"{url}/console#/agents/{agent_id}/runs")
    page_is(d, "runs")
    accessible(d, "runs")
    shot(d, "6-runs")
    links = d.find_elements("css selector", "main table a")
    assert len(links) == 3
    links[-1].click()  # the oldest: the streamed greeting
    page_is(d, "run")
    accessible(d, "run")
    shot(d, "7-run")
    assert "Step 1" in d.page_source and "Model " in d.page_source
    until(d, lambda d: d.find_elements("css selector", "main details summary"))
    assert "The request this step sent" in d.page_source  # traces are on in this stack


def test_the_history_page_shows_diffs_and_rewinds_and_forks(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    url, _ = stack
    d = browser
    http = api(url)
    made = http.post(
        "/v1/agents/",
        json={
            "name": "Ridge log",
            "model": "openai/gpt-test",
            "memory_blocks": [{"label": "human", "value": "Hiker."}],
        },
    ).json()
    agent_id = made["id"]
    http.post(
        f"/v1/agents/{agent_id}/messages",
        json={"messages": [{"role": "user", "content": "please file this"}]},
    )
    assert (
        "north trail" in http.get(f"/v1/agents/{agent_id}/core-memory/blocks/human").json()["value"]
    )
    versions = http.get(f"/v1/agents/{agent_id}/history").json()
    edit = next(v for v in versions if v["changes"]["blocks"])
    created = versions[-1]["version"]

    d.get(f"{url}/console")  # signed in for this tab (the key kept as the sign-in keeps it)
    d.execute_script("sessionStorage.setItem('cairn.console.key', arguments[0])", KEY)
    d.get(f"{url}/console#/agents/{agent_id}/history")
    page_is(d, "history")
    accessible(d, "history")
    assert "human edited" in d.page_source and "Created" in d.page_source
    button(d, "Show changes")  # drawn
    by_css(d, f"[aria-label='Show the changes of version {edit['version']}']").click()
    added = until(d, lambda d: d.find_elements("css selector", "pre.diff .added"))
    assert "+The north trail is closed." in added[-1].text
    # a line each, and the line kept as it was: the value had no final newline, so the
    # line was shown removed and added again on one line ("-Hiker.+Hiker.")
    assert d.find_elements("css selector", "pre.diff .removed") == []
    lines = by_css(d, "pre.diff").text.splitlines()
    assert " Hiker." in lines and all(line.count("+") <= 1 for line in lines if line[:3] != "+++")
    shot(d, "8-history")

    # Rewind to the agent as it was made (confirmed): the block is back, a new version says so.
    by_css(d, f"[aria-label='Rewind to version {created}']").click()
    d.switch_to.alert.accept()
    until(
        d,
        lambda d: (
            http.get(f"/v1/agents/{agent_id}/core-memory/blocks/human").json()["value"] == "Hiker."
        ),
    )
    until(d, lambda d: f"back to version {created}" in d.page_source)
    # Fork from the edit: a new agent, opened, with the block as it was then.
    by_css(d, f"[aria-label='Fork from version {edit['version']}']").click()
    page_is(d, "agent")
    fork_id = d.current_url.rsplit("/", 1)[-1]
    assert fork_id != agent_id
    human = http.get(f"/v1/agents/{fork_id}/core-memory/blocks/human").json()["value"]
    assert "north trail" in human


def test_the_usage_page_shows_the_organizations_steps_and_tokens(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    url, _ = stack
    d = browser
    http = api(url)
    made = http.post("/v1/agents/", json={"name": "Counted", "model": "openai/gpt-test"}).json()
    http.post(
        f"/v1/agents/{made['id']}/messages",
        json={"messages": [{"role": "user", "content": "hello"}]},
    )
    used = http.get("/v1/usage").json()
    d.get(f"{url}/console")
    d.execute_script("sessionStorage.setItem('cairn.console.key', arguments[0])", KEY)
    d.get(f"{url}/console#/usage")
    page_is(d, "usage")
    accessible(d, "usage")
    shot(d, "9-usage")
    table = by_css(d, "main table")
    assert "Counted" in table.text
    total = by_css(d, "main tfoot").text
    assert f"{used['total']['steps']:,}" in total and f"{used['total']['prompt_tokens']:,}" in total
    # This month against the organization's limits (none set here).
    month = http.get("/v1/usage/limits").json()["month"]
    shown = by_css(d, "main section.month").text
    assert f"{month['tokens']:,} (no budget)" in shown and "no limit" in shown
    # Another range: the page asks again for those days.
    labelled(d, "From").send_keys("01012020")
    labelled(d, "To").send_keys("01022020")
    button(d, "Show").click()
    until(d, lambda d: "Nothing used in these days." in d.page_source)


def signed_in(d: Any, url: str, route: str) -> None:
    d.get(f"{url}/console")
    d.execute_script("sessionStorage.setItem('cairn.console.key', arguments[0])", KEY)
    d.get(f"{url}/console{route}")


def test_the_chat_shows_the_conversation_oldest_first_after_a_reload(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    """The chat's history (the newest page, which the API lists oldest first as Letta's
    does) reads top to bottom in the order it was said: each question above its answer,
    the latest next to the message box."""
    url, _ = stack
    d, http = browser, api(url)
    made = http.post("/v1/agents/", json={"name": "Ordered", "model": "openai/gpt-test"}).json()
    for text in ("first question", "second question"):
        sent = http.post(
            f"/v1/agents/{made['id']}/messages",
            json={"messages": [{"role": "user", "content": text}]},
        )
        assert sent.status_code == 200, sent.text
    signed_in(d, url, f"#/agents/{made['id']}/chat")
    page_is(d, "chat")
    said = d.execute_script(
        "return [...document.querySelectorAll('ol.messages > li')].map(li => "
        "[li.className.split(' ').find(c => c.endsWith('_message')), "
        "li.querySelector('.content')?.textContent || ''])"
    )
    kinds = [k for k, _ in said if k in ("user_message", "assistant_message")]
    texts = [t for k, t in said if k == "user_message"]
    assert [t for t in texts if "question" in t] == ["first question", "second question"], said
    assert kinds[-1] == "assistant_message" and kinds.index("user_message") < kinds.index(
        "assistant_message"
    ), said


def test_agent_search_filters_by_name_and_tag_and_keeps_what_was_asked(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    """Searching by name shows the agents the API finds (not all of them) and keeps the
    words in the box; the search is the page's address, so `#/?tag=...` is a page too."""
    url, _ = stack
    d, http = browser, api(url)
    for name, tags in (("Zephyr-one", ["breeze"]), ("Zephyr-two", []), ("Other", ["breeze"])):
        body = {"name": name, "model": "openai/gpt-test", "tags": tags}
        assert http.post("/v1/agents/", json=body).status_code == 200
    everyone = len(http.get("/v1/agents/", params={"limit": 200}).json())
    signed_in(d, url, "#/")
    page_is(d, "agents")

    def names(d: Any) -> list[str]:
        return [a.text for a in d.find_elements("css selector", "main tbody td:first-child a")]

    until(d, lambda d: len(names(d)) == everyone)
    labelled(d, "Name contains").send_keys("Zephyr")
    press(d, "Search")
    until(d, lambda d: sorted(names(d)) == ["Zephyr-one", "Zephyr-two"])
    assert labelled(d, "Name contains").get_attribute("value") == "Zephyr"
    d.get(f"{url}/console#/?tag=breeze")
    page_is(d, "agents")
    until(d, lambda d: sorted(names(d)) == ["Other", "Zephyr-one"])
    assert labelled(d, "Tag").get_attribute("value") == "breeze"


def in_view(d: Any, selector: str) -> bool:
    """Whether the element shows inside the window as it is (no scrolling needed)."""
    return bool(
        d.execute_script(
            "const e = document.querySelector(arguments[0]); if (!e) return false;"
            "const r = e.getBoundingClientRect();"
            "return r.width > 0 && r.height > 0 && r.top < innerHeight && r.left < innerWidth"
            " && r.bottom > 0 && r.right > 0;",
            selector,
        )
    )


def test_the_workspace_shows_settings_conversation_and_memory_at_once(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    """An agent's chat is a workspace, as the ADE's: its settings, the conversation and its
    memory side by side on a laptop's screen (one column, the conversation first, on a
    phone's); the settings save through the API, and the memory pane shows a block the
    agent edited as soon as its turn ends."""
    url, _ = stack
    d, http = browser, api(url)
    body = {
        "name": "Builder",
        "model": "openai/gpt-test",
        "memory_blocks": [{"label": "human", "value": "A hiker."}],
    }
    made = http.post("/v1/agents/", json=body).json()
    try:
        d.set_window_size(1366, 768)
        signed_in(d, url, f"#/agents/{made['id']}/chat")
        page_is(d, "chat")
        for part in (
            "aside.settings textarea",
            "section.conversation textarea",
            "aside.memory .bar",
        ):
            assert in_view(d, part), part
        assert in_view(d, "aside.memory form.panel textarea")  # the human block's editor
        accessible(d, "workspace")
        # Settings: the system prompt, saved through the API.
        prompt = labelled(d, "System prompt")
        prompt.clear()
        prompt.send_keys("You are a trail guide.")
        press(d, "Save settings")
        until(
            d,
            lambda d: (
                http.get(f"/v1/agents/{made['id']}").json()["system"] == "You are a trail guide."
            ),
        )
        # A turn that edits memory: the pane shows the new value without a reload.
        labelled(d, "Message").send_keys("please file this")
        press(d, "Send")
        until(d, lambda d: "north trail is closed" in value_of(d, "Block “human”"))
        d.execute_script("document.querySelector('aside.memory').scrollTop = 0; scrollTo(0, 0)")
        shot(d, "10-workspace")
        # On a phone's screen: one column, the conversation above the memory, still usable.
        d.set_window_size(390, 844)
        tops = d.execute_script(
            "return ['section.conversation', 'aside.memory', 'aside.settings'].map("
            "s => document.querySelector(s).getBoundingClientRect().top)"
        )
        assert tops == sorted(tops), tops
        assert d.execute_script(  # nothing wider than the screen: no sideways scrolling
            "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        )
        shot(d, "11-workspace-narrow")
    finally:
        d.set_window_size(1280, 1000)


def test_a_builder_sets_model_settings_and_tool_rules_in_the_workspace(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    """The workspace's settings pane changes what the ADE's does: the model settings Letta
    shows for the agent's provider (temperature, output tokens, reasoning effort, parallel
    tool calls) and the context window, and the tool rules, one added or removed at a time;
    each checked against the API."""
    from selenium.webdriver.support.select import Select

    url, _ = stack
    d, http = browser, api(url)
    made = http.post("/v1/agents/", json={"name": "Tuned", "model": "openai/gpt-test"}).json()
    tools = sorted(t["name"] for t in made["tools"])
    assert len(tools) >= 3, tools
    signed_in(d, url, f"#/agents/{made['id']}/chat")
    page_is(d, "chat")
    for label, value in (
        ("Temperature", "0.3"),
        ("Max output tokens", "777"),
        ("Context window (tokens)", "16000"),
    ):
        labelled(d, label).clear()
        labelled(d, label).send_keys(value)
    Select(labelled(d, "Reasoning effort")).select_by_value("low")
    labelled(d, "Parallel tool calls").click()
    press(d, "Save settings")

    def llm(d: Any) -> dict[str, Any]:
        return dict(http.get(f"/v1/agents/{made['id']}").json()["llm_config"])

    until(d, lambda d: llm(d)["max_tokens"] == 777)
    now = llm(d)
    assert now["temperature"] == 0.3 and now["context_window"] == 16000, now
    assert now["reasoning_effort"] == "low" and now["parallel_tool_calls"] is True, now
    # Saved again unchanged, nothing moves (the settings shown are the agent's own).
    press(d, "Save settings")
    until(d, lambda d: "Saved at" in by_css(d, "aside.settings [role=status]").text)
    assert llm(d) == now

    # Tool rules: one of each shape (none, children, a count), then one removed.
    def rules() -> list[dict[str, Any]]:
        return list(http.get(f"/v1/agents/{made['id']}").json()["tool_rules"])

    def add_rule(kind: str, tool: str, **more: Any) -> None:
        open_details(d, "Add a tool rule")
        Select(labelled(d, "Rule")).select_by_value(kind)
        Select(labelled(d, "Tool")).select_by_value(tool)
        if "children" in more:
            pick = Select(labelled(d, "Tools it names"))
            for child in more["children"]:
                pick.select_by_value(child)
        if "count" in more:
            labelled(d, "Most calls a turn").clear()
            labelled(d, "Most calls a turn").send_keys(str(more["count"]))
        before = len(rules())
        press(d, "Add rule")
        until(d, lambda d: len(rules()) == before + 1)

    add_rule("exit_loop", tools[0])
    add_rule("constrain_child_tools", tools[1], children=[tools[0], tools[2]])
    add_rule("max_count_per_step", tools[2], count=2)
    assert [(r["type"], r["tool_name"]) for r in rules()] == [
        ("exit_loop", tools[0]),
        ("constrain_child_tools", tools[1]),
        ("max_count_per_step", tools[2]),
    ]
    assert rules()[1]["children"] == [tools[0], tools[2]]
    assert rules()[2]["max_count_limit"] == 2
    until(d, lambda d: "Tool rules (3)" in d.page_source)
    accessible(d, "workspace settings")
    d.execute_script("document.querySelector('aside.settings fieldset').scrollIntoView()")
    shot(d, "12-workspace-settings")
    tap(d, f"button[aria-label^='Remove the rule {tools[1]} ']")
    until(d, lambda d: [r["type"] for r in rules()] == ["exit_loop", "max_count_per_step"])
    until(d, lambda d: "Tool rules (2)" in d.page_source)


def test_a_builder_sets_tags_and_the_secrets_its_tools_get(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    """The settings pane saves the agent's tags, and its tools' secrets one at a time: each
    name listed, no value ever on the page, one removed; the last one stays (an empty set
    changes nothing, as in Letta), said so; each checked against the API."""
    url, _ = stack
    d, http = browser, api(url)
    made = http.post("/v1/agents/", json={"name": "Keeper", "model": "openai/gpt-test"}).json()
    path = f"/v1/agents/{made['id']}"

    def secrets() -> dict[str, str]:
        return {s["key"]: s["value"] for s in http.get(path).json()["secrets"]}

    signed_in(d, url, f"#/agents/{made['id']}/chat")
    page_is(d, "chat")
    labelled(d, "Tags (comma-separated)").send_keys("trail, guide ,")
    press(d, "Save settings")
    until(d, lambda d: sorted(http.get(path).json()["tags"]) == ["guide", "trail"])
    for name, value in (("MAP_KEY", "sk-map-12345"), ("WEATHER_KEY", "sk-wx-67890")):
        open_details(d, "Add or change a secret")
        labelled(d, "Secret name").send_keys(name)
        labelled(d, "Secret value").send_keys(value)
        press(d, "Save secret")
        until(d, lambda d, name=name: name in secrets())
    assert secrets() == {"MAP_KEY": "sk-map-12345", "WEATHER_KEY": "sk-wx-67890"}
    until(d, lambda d: "Tool secrets (2)" in d.page_source)
    assert "sk-map-12345" not in d.page_source and "sk-wx-67890" not in d.page_source
    accessible(d, "secrets")
    tap(d, "button[aria-label='Remove the secret MAP_KEY']")
    until(d, lambda d: secrets() == {"WEATHER_KEY": "sk-wx-67890"})
    until(d, lambda d: "Tool secrets (1)" in d.page_source)
    tap(d, "button[aria-label='Remove the secret WEATHER_KEY']")
    until(d, lambda d: "The last secret cannot be removed" in d.page_source)
    assert secrets() == {"WEATHER_KEY": "sk-wx-67890"}


def tap(driver: Any, selector: str) -> None:
    """Click the element the selector finds, found again if the page was drawn anew between
    finding and clicking it (a save redraws the page after its answer)."""
    from selenium.common.exceptions import StaleElementReferenceException

    def attempt(d: Any) -> bool:
        found = d.find_elements("css selector", selector)
        if not found:
            return False
        try:
            found[0].click()
        except StaleElementReferenceException:
            return False
        return True

    until(driver, attempt)


def confirmed(d: Any) -> None:
    until(d, lambda d: d.switch_to.alert).accept()


def open_details(d: Any, summary: str) -> None:
    until(
        d,
        lambda d: next(
            (s for s in d.find_elements("tag name", "summary") if s.text.strip() == summary), None
        ),
    ).click()


def test_a_builder_manages_blocks_passages_the_conversation_and_agent_files(
    stack: tuple[str, FakeLLM], browser: Any, tmp_path: Path
) -> None:
    """Through the overview, as an ADE user would, all through the public API: add a block
    (label, value, limit, read-only), change its settings, detach it; add a passage and
    delete it; export the agent file; reset the messages; and, on the agents page, import
    an agent file as a new agent."""
    url, _ = stack
    d, http = browser, api(url)
    body = {
        "name": "Workbench",
        "model": "openai/gpt-test",
        "memory_blocks": [{"label": "human", "value": "A hiker."}],
    }
    made = http.post("/v1/agents/", json=body).json()
    agent_id = made["id"]

    def blocks() -> dict[str, Any]:
        found = http.get(f"/v1/agents/{agent_id}/core-memory/blocks").json()
        return {b["label"]: b for b in found}

    signed_in(d, url, f"#/agents/{agent_id}")
    page_is(d, "agent")
    accessible(d, "agent overview")
    # A block: added and attached, its settings changed, then detached.
    open_details(d, "Add a block")
    labelled(d, "Label").send_keys("trail")
    labelled(d, "Value").send_keys("North loop")
    limit = labelled(d, "Limit")
    limit.clear()
    limit.send_keys("200")
    press(d, "Add block")
    until(d, lambda d: "trail" in blocks())
    assert (blocks()["trail"]["value"], blocks()["trail"]["limit"]) == ("North loop", 200)
    until(d, lambda d: label_of(d, "Block “trail”"))
    open_details(d, "Settings of trail")
    limit = labelled(d, "Limit of trail")
    limit.clear()
    limit.send_keys("300")
    press(d, "Save trail's settings")
    until(d, lambda d: blocks()["trail"]["limit"] == 300)
    until(d, lambda d: d.find_elements("css selector", "[aria-label='Detach trail']"))
    tap(d, "[aria-label='Detach trail']")
    confirmed(d)
    until(d, lambda d: "trail" not in blocks())
    until(d, lambda d: "Block “trail”" not in d.page_source)
    # The detached block is still the organization's: found by its label, attached again.
    detached = http.get("/v1/blocks/", params={"label": "trail"}).json()
    assert [b["value"] for b in detached] == ["North loop"]
    open_details(d, "Attach a block")
    labelled(d, "Block label contains").send_keys("trai")
    press(d, "Find blocks")
    tap(d, f"[aria-label='Attach the block trail ({detached[0]['id']})']")
    until(d, lambda d: blocks().get("trail", {}).get("id") == detached[0]["id"])
    until(d, lambda d: label_of(d, "Block “trail”"))
    # A passage: added, found, deleted.
    open_details(d, "Add a passage")
    labelled(d, "New passage").send_keys("The ridge hut sleeps six.")
    labelled(d, "Its tags (comma-separated)").send_keys("huts")
    press(d, "Add passage")
    until(d, lambda d: "The ridge hut sleeps six." in by_css(d, "ol.passages").text)
    passages = http.get(f"/v1/agents/{agent_id}/archival-memory").json()
    assert [(p["text"], p["tags"]) for p in passages] == [("The ridge hut sleeps six.", ["huts"])]
    tap(d, "ol.passages button")
    confirmed(d)
    until(d, lambda d: http.get(f"/v1/agents/{agent_id}/archival-memory").json() == [])
    until(d, lambda d: "No passages yet." in d.page_source)
    # The agent file, offered as a download named for the agent.
    press(d, "Export agent file")
    link = until(d, lambda d: d.find_elements("css selector", "a.download"))[0]
    assert link.get_attribute("download") == "Workbench.af"
    assert link.get_attribute("href").startswith("blob:")
    # The conversation reset: only the system message stays in the window.
    sent = http.post(
        f"/v1/agents/{agent_id}/messages",
        json={"messages": [{"role": "user", "content": "hello"}]},
    )
    assert sent.status_code == 200
    assert len(http.get(f"/v1/agents/{agent_id}").json()["message_ids"]) > 1
    d.refresh()
    page_is(d, "agent")
    press(d, "Reset messages")
    confirmed(d)
    until(d, lambda d: len(http.get(f"/v1/agents/{agent_id}").json()["message_ids"]) == 1)
    # An agent file imported on the agents page: a new agent, opened.
    exported = tmp_path / "workbench.af"
    exported.write_text(http.get(f"/v1/agents/{agent_id}/export").text)
    before = {a["id"] for a in http.get("/v1/agents/", params={"limit": 500}).json()}
    d.get(f"{url}/console#/")
    page_is(d, "agents")
    labelled(d, "Agent file").send_keys(str(exported))
    press(d, "Import")
    until(d, lambda d: d.execute_script("return location.hash").startswith("#/agents/agent-"))
    after = {a["id"] for a in http.get("/v1/agents/", params={"limit": 500}).json()}
    (new,) = after - before
    assert d.execute_script("return location.hash") == f"#/agents/{new}"
    page_is(d, "agent")
    accessible(d, "imported agent")


ADD_TWO = (
    "def add_two(a: int, b: int) -> int:\n"
    '    """Add two numbers.\n\n    Args:\n        a: The first.\n        b: The second.\n    """\n'
    "    return a + b\n"
)


def test_a_builder_writes_runs_attaches_and_detaches_a_tool(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    """The overview's tools: a source editor shows the schema the source derives, runs it
    with arguments, makes it and attaches it; a tool is detached and attached again from
    the organization's list. Each checked against the API."""
    url, _ = stack
    d, http = browser, api(url)
    made = http.post("/v1/agents/", json={"name": "Toolsmith", "model": "openai/gpt-test"}).json()
    agent_id = made["id"]

    def names() -> set[str]:
        return {t["name"] for t in http.get(f"/v1/agents/{agent_id}/tools").json()}

    signed_in(d, url, f"#/agents/{agent_id}")
    page_is(d, "agent")
    open_details(d, "Write a tool")
    d.execute_script("arguments[0].value = arguments[1]", labelled(d, "Source (Python)"), ADD_TWO)
    press(d, "Show schema")
    until(d, lambda d: '"add_two"' in by_css(d, "details.panel pre").text)
    assert '"b"' in by_css(d, "details.panel pre").text
    arguments = labelled(d, "Arguments (JSON)")
    arguments.clear()
    arguments.send_keys('{"a": 2, "b": 3}')
    press(d, "Run")
    until(d, lambda d: "Returned (success)" in d.page_source)
    assert by_css(d, "details.panel pre").text.strip() == "5"
    press(d, "Create and attach")
    until(d, lambda d: "add_two" in names())
    until(d, lambda d: d.find_elements("css selector", "[aria-label='Detach add_two']"))
    accessible(d, "tools")
    tap(d, "[aria-label='Detach add_two']")
    until(d, lambda d: "add_two" not in names())
    from selenium.webdriver.support.ui import Select

    chooser = until(
        d,
        lambda d: (
            (el := labelled(d, "Attach a tool"))
            and any(o.text == "add_two" for o in el.find_elements("tag name", "option"))
            and el
        ),
    )
    Select(chooser).select_by_visible_text("add_two")
    press(d, "Attach")
    until(d, lambda d: "add_two" in names())


def test_a_builder_makes_a_folder_uploads_files_and_watches_them_processed(
    stack: tuple[str, FakeLLM], browser: Any, tmp_path: Path
) -> None:
    """Folders and files on the overview, as in the ADE: make a folder (attached), upload a
    file and see it processed without a reload, meet a refused upload's reason, delete the
    file, attach one of the organization's folders and detach it; each checked against the
    API."""
    from selenium.webdriver.support.select import Select

    url, _ = stack
    d, http = browser, api(url)
    made = http.post("/v1/agents/", json={"name": "Reader", "model": "openai/gpt-test"}).json()
    agent = made["id"]

    def attached() -> list[str]:
        return sorted(f["name"] for f in http.get(f"/v1/agents/{agent}/folders").json())

    signed_in(d, url, f"#/agents/{agent}")
    page_is(d, "agent")
    open_details(d, "Make a folder")
    labelled(d, "Folder name").send_keys("Trail notes")
    press(d, "Make and attach")
    until(d, lambda d: attached() == ["Trail notes"])
    folder = http.get("/v1/folders/name/Trail notes").json()
    notes = tmp_path / "north-trail.md"
    notes.write_text("# The north trail\n\nClosed after the storm; the ford is high.\n" * 40)
    until(d, lambda d: label_of(d, "Upload a file to Trail notes")).send_keys(str(notes))
    press(d, "Upload")
    done = until(
        d,
        lambda d: next(
            (
                td
                for td in d.find_elements(
                    "css selector", "tr[data-file='Trail notes/north-trail.md'] td.processing"
                )
                if td.text.startswith("completed")
            ),
            None,
        ),
    )
    stored = http.get(f"/v1/folders/{folder}/files").json()
    assert [(f["file_name"], f["processing_status"]) for f in stored] == [
        ("Trail notes/north-trail.md", "completed")
    ]
    assert done.text == f"completed · {stored[0]['total_chunks']} chunks"
    accessible(d, "folders")
    shot(d, "13-folders")
    # A file Cairn does not read: refused with its reason, nothing stored.
    odd = tmp_path / "tool.exe"
    odd.write_bytes(b"MZ\x90\x00" * 64)
    labelled(d, "Upload a file to Trail notes").send_keys(str(odd))
    press(d, "Upload")
    until(d, lambda d: "Unsupported file type" in d.page_source)
    assert len(http.get(f"/v1/folders/{folder}/files").json()) == 1
    tap(d, "button[aria-label='Delete Trail notes/north-trail.md']")
    confirmed(d)
    until(d, lambda d: http.get(f"/v1/folders/{folder}/files").json() == [])
    until(d, lambda d: "No files yet." in d.page_source)
    # One of the organization's folders, attached from the list; then detached.
    assert http.post("/v1/folders/", json={"name": "Maps"}).status_code == 200
    d.refresh()
    page_is(d, "agent")
    choice = until(
        d,
        lambda d: (
            Select(label_of(d, "Attach a folder"))
            if "Maps" in (getattr(label_of(d, "Attach a folder"), "text", None) or "")
            else None
        ),
    )
    choice.select_by_visible_text("Maps")
    press(d, "Attach folder")
    until(d, lambda d: attached() == ["Maps", "Trail notes"])
    tap(d, "button[aria-label='Detach the folder Trail notes']")
    until(d, lambda d: attached() == ["Maps"])


def test_a_builder_adds_an_mcp_server_tries_its_tools_and_attaches_one(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    """The MCP servers page: add a server with a token (its tools listed, the token never
    shown whole), try a tool with arguments (the server is called), meet a wrong token's
    reason on a refresh and mend it; then attach one of its tools on an agent's overview and
    delete the server; each checked against the API and the server."""
    from selenium.webdriver.support.select import Select

    url, _ = stack
    d, http = browser, api(url)
    token = "mcp-secret-123456789"
    with mcp_server(token=token) as fake:
        signed_in(d, url, "#/mcp")
        page_is(d, "mcp")
        labelled(d, "Server name").send_keys("calc")
        labelled(d, "Server URL").send_keys(fake.url)
        labelled(d, "Authorization header (optional)").send_keys(f"Bearer {token}")
        press(d, "Add server")
        until(
            d, lambda d: [s["server_name"] for s in http.get("/v1/mcp-servers/").json()] == ["calc"]
        )
        server = http.get("/v1/mcp-servers/").json()[0]
        until(d, lambda d: "Tools of calc" in d.page_source and "shout" in d.page_source)
        assert token not in d.page_source and "...6789" in d.page_source
        accessible(d, "mcp")
        shot(d, "14-mcp")
        open_details(d, "Try a tool of calc")
        Select(labelled(d, "Tool of calc")).select_by_visible_text("add")
        labelled(d, "Arguments (JSON) for calc").clear()
        labelled(d, "Arguments (JSON) for calc").send_keys('{"a": 2, "b": 40}')
        press(d, "Run tool")
        until(d, lambda d: by_css(d, "pre.tool-return").text == "42")
        assert fake.calls[-1] == ("add", {"a": 2, "b": 40})
        # A wrong token: the refresh says why; a new token mends it.
        open_details(d, "Change its token")
        labelled(d, "New Authorization header of calc").send_keys("Bearer wrong")
        press(d, "Change token")
        until(d, lambda d: "Token changed" in d.page_source)
        tap(d, "button[aria-label='Refresh calc']")
        until(
            d,
            lambda d: by_css(d, "section.panel [role=alert]").text.startswith("MCP server `calc`"),
        )
        labelled(d, "New Authorization header of calc").send_keys(f"Bearer {token}")
        press(d, "Change token")
        until(d, lambda d: "Token changed" in d.page_source)
        tap(d, "button[aria-label='Refresh calc']")
        until(d, lambda d: "Listed again" in d.page_source)
        # Its tools are the organization's: attached on an agent's overview.
        made = http.post("/v1/agents/", json={"name": "Caller", "model": "openai/gpt-test"}).json()
        signed_in(d, url, f"#/agents/{made['id']}")
        page_is(d, "agent")
        until(
            d,
            lambda d: "shout" in (getattr(label_of(d, "Attach a tool"), "text", None) or ""),
        )
        Select(labelled(d, "Attach a tool")).select_by_visible_text("shout")
        press(d, "Attach")
        until(
            d,
            lambda d: (
                "shout" in [t["name"] for t in http.get(f"/v1/agents/{made['id']}").json()["tools"]]
            ),
        )
        d.get(f"{url}/console#/mcp")
        page_is(d, "mcp")
        tap(d, "button[aria-label='Delete calc']")
        confirmed(d)
        until(d, lambda d: http.get("/v1/mcp-servers/").json() == [])
        until(d, lambda d: "No MCP servers yet." in d.page_source)
        tools = [t["name"] for t in http.get(f"/v1/agents/{made['id']}").json()["tools"]]
        assert "shout" not in tools and server["id"]


def test_an_organization_adds_its_own_model_provider_after_checking_its_key(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    """The providers page: a refused key is said so before anything is stored; a good one is
    added (never shown again but its last four), its models listed under its name, its key
    checked again, then deleted; each checked against the API."""
    url, fake = stack
    d, http = browser, api(url)
    signed_in(d, url, "#/providers")
    page_is(d, "providers")
    labelled(d, "Provider name").send_keys("team")
    labelled(d, "API key").send_keys("sk-rejected-0001")
    labelled(d, "Base URL").send_keys(f"{fake.base_url}/v1")
    press(d, "Check the key")
    until(d, lambda d: by_css(d, "form [role=status]").text.startswith("Refused"))
    assert http.get("/v1/providers/").json() == []
    labelled(d, "API key").clear()
    labelled(d, "API key").send_keys("sk-team-4321")
    press(d, "Check the key")
    until(d, lambda d: by_css(d, "form [role=status]").text == "The key works.")
    press(d, "Add provider")
    until(d, lambda d: [p["name"] for p in http.get("/v1/providers/").json()] == ["team"])
    handles = [m["handle"] for m in http.get("/v1/models/").json()]
    theirs = sorted(h.removeprefix("team/") for h in handles if h.startswith("team/"))
    assert theirs, handles
    cell = until(d, lambda d: d.find_elements("css selector", "tr[data-provider=team] td.models"))
    assert sorted(cell[0].text.split(", ")) == theirs
    assert "sk-team-4321" not in d.page_source and "...4321" in d.page_source
    accessible(d, "providers")
    shot(d, "15-providers")
    tap(d, "button[aria-label='Check the key of team']")
    until(d, lambda d: "Key works" in by_css(d, "tr[data-provider=team]").text)
    tap(d, "button[aria-label='Delete team']")
    confirmed(d)
    until(d, lambda d: http.get("/v1/providers/").json() == [])
    until(d, lambda d: "No providers of your own" in d.page_source)


def test_a_builder_connects_a_telegram_bot_and_disconnects_it(
    stack: tuple[str, FakeLLM], browser: Any, telegram_api: FakeTelegram
) -> None:
    """An agent's Telegram section (docs/telegram.md): a malformed token is refused naming
    the field, the bot's token connects it (Telegram's webhook set to this API, the token
    never shown whole), and disconnecting removes the webhook; each checked against the API
    and the fake Bot API."""
    url, _ = stack
    d, http = browser, api(url)
    made = http.post("/v1/agents/", json={"name": "Chatter", "model": "openai/gpt-test"}).json()
    signed_in(d, url, f"#/agents/{made['id']}")
    page_is(d, "agent")
    open_details(d, "Connect a Telegram bot")
    labelled(d, "Bot token (from @BotFather)").send_keys("not-a-token")
    press(d, "Connect bot")
    until(d, lambda d: "token" in by_css(d, "section[aria-labelledby=telegram] .error").text)
    assert http.get("/v1/telegram/bots").json() == []
    labelled(d, "Bot token (from @BotFather)").clear()
    labelled(d, "Bot token (from @BotFather)").send_keys(BOT_TOKEN)
    assert labelled(d, "Where Telegram reaches this API").get_attribute("value") == url
    press(d, "Connect bot")
    until(
        d, lambda d: [b["agent_id"] for b in http.get("/v1/telegram/bots").json()] == [made["id"]]
    )
    bot = http.get("/v1/telegram/bots").json()[0]
    assert telegram_api.webhook["url"] == f"{url}/v1/telegram/webhook/{bot['id']}"
    until(d, lambda d: d.find_elements("css selector", f"li[data-bot={BOT_USERNAME}]"))
    assert BOT_TOKEN not in d.page_source and f"token ...{BOT_TOKEN[-4:]}" in d.page_source
    accessible(d, "telegram")
    tap(d, f"button[aria-label='Disconnect @{BOT_USERNAME}']")
    confirmed(d)
    until(d, lambda d: http.get("/v1/telegram/bots").json() == [])
    until(d, lambda d: "No bot connected." in d.page_source)
    assert telegram_api.webhook == {}


def test_lists_go_to_their_end_a_page_at_a_time(stack: tuple[str, FakeLLM], browser: Any) -> None:
    """More than a page of agents, and of messages: "Show more agents" adds the next page
    of a search (the API's `after` cursor) until there is no more; "Show earlier messages"
    puts the chat's previous page above it, in order."""
    url, _ = stack
    d, http = browser, api(url)
    for n in range(110):
        made = http.post("/v1/agents/", json={"name": f"Many-{n:03}", "model": "openai/gpt-test"})
        assert made.status_code == 200, made.text
    signed_in(d, url, "#/?name=Many-")
    page_is(d, "agents")

    def names(d: Any) -> list[str]:
        return [a.text for a in d.find_elements("css selector", "main tbody td:first-child a")]

    until(d, lambda d: len(names(d)) == 100)
    press(d, "Show more agents")
    until(d, lambda d: len(names(d)) == 110)
    assert sorted(names(d)) == [f"Many-{n:03}" for n in range(110)]
    until(d, lambda d: not button_shown(d, "Show more agents"))
    # A chat of 150 messages: the last 100, then the 50 before them above.
    body = {
        "name": "Chatty",
        "model": "openai/gpt-test",
        "metadata": {"cairn_message_embeddings": False},
    }
    agent = http.post("/v1/agents/", json=body).json()
    said = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"line {n:03}"}
        for n in range(150)
    ]
    captured = http.post(
        f"/v1/agents/{agent['id']}/messages/capture",
        json={"messages": said, "add_to_context": True},
    )
    assert captured.status_code == 200, captured.text
    d.get(f"{url}/console#/agents/{agent['id']}/chat")
    page_is(d, "chat")

    def lines(d: Any) -> list[str]:
        return d.execute_script(
            "return [...document.querySelectorAll('ol.chat-log > li .content')]"
            ".map(e => e.textContent).filter(t => t.startsWith('line '))"
        )

    until(d, lambda d: len(lines(d)) >= 99)
    shown = lines(d)
    assert shown == sorted(shown) and shown[-1] == "line 149"
    press(d, "Show earlier messages")
    until(d, lambda d: lines(d)[0] == "line 000")
    assert lines(d) == [f"line {n:03}" for n in range(150)]


def test_runs_versions_and_passages_go_to_their_end_too(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    """An agent of 101 runs (sent in the background), more than a page of versions, and 101
    passages: each list shows its first page and "Show ..." adds the rest, to the end (each
    run, version and passage the API has, once)."""
    url, _ = stack
    d, http = browser, api(url)
    agent = http.post("/v1/agents/", json={"name": "Busy", "model": "openai/gpt-test"}).json()
    path = f"/v1/agents/{agent['id']}"
    for n in range(101):
        sent = http.post(
            f"{path}/messages/async",
            json={"messages": [{"role": "user", "content": f"quick {n}"}]},
        )
        assert sent.status_code == 200, sent.text
        made = http.post(f"{path}/archival-memory", json={"text": f"passage {n:03}"})
        assert made.status_code == 200, made.text

    def runs() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        asked = {"agent_id": agent["id"], "limit": 100}
        while True:
            page = http.get("/v1/runs/", params=asked).json()
            found += page
            if len(page) < 100:
                return found
            asked["after"] = page[-1]["id"]

    until(
        d,
        lambda d: len(runs()) == 101 and all(r["status"] == "completed" for r in runs()),
        timeout=300,
    )
    every_run = sorted(r["id"] for r in runs())
    signed_in(d, url, f"#/agents/{agent['id']}/runs")
    page_is(d, "runs")

    def cells(d: Any, selector: str) -> list[str]:
        return [e.text for e in d.find_elements("css selector", selector)]

    until(d, lambda d: len(cells(d, "main tbody td:first-child a")) == 100)
    press(d, "Show earlier runs")
    until(d, lambda d: len(cells(d, "main tbody td:first-child a")) == 101)
    assert sorted(cells(d, "main tbody td:first-child a")) == every_run
    until(d, lambda d: not button_shown(d, "Show earlier runs"))
    # Versions: newest first, 50 a page, each with its changes against the one before.
    versions: list[int] = []
    asked = {"limit": 100}
    while True:
        page = http.get(f"{path}/history", params=asked).json()
        versions += [v["version"] for v in page]
        if len(page) < 100:
            break
        asked["before"] = page[-1]["version"]
    assert len(versions) > 100, len(versions)
    d.get(f"{url}/console#/agents/{agent['id']}/history")
    page_is(d, "history")

    def shown_versions(d: Any) -> list[int]:
        return [int(t.split()[1]) for t in cells(d, "li.version h2")]

    until(d, lambda d: len(shown_versions(d)) == 50)
    while button_shown(d, "Show earlier versions"):
        count = len(shown_versions(d))
        press(d, "Show earlier versions")
        until(d, lambda d, count=count: len(shown_versions(d)) > count)
    assert shown_versions(d) == versions
    # The oldest page's last-but-one version still shows its changes against the one before.
    changes = d.find_elements("css selector", "li.version button[aria-label^='Show the changes']")
    assert len(changes) == len(versions) - 1
    # Passages: oldest first, a page, then the rest.
    d.get(f"{url}/console#/agents/{agent['id']}")
    page_is(d, "agent")
    until(d, lambda d: len(cells(d, "ol.passages .content")) == 100)
    press(d, "Show more passages")
    until(d, lambda d: len(cells(d, "ol.passages .content")) == 101)
    assert cells(d, "ol.passages .content") == [f"passage {n:03}" for n in range(101)]
    until(d, lambda d: not button_shown(d, "Show more passages"))


def button_shown(d: Any, text: str) -> bool:
    return any(
        b.text.strip() == text and b.is_displayed() for b in d.find_elements("tag name", "button")
    )


def test_a_builder_schedules_messages_and_ties_identities(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    """The overview's scheduled messages (on a cron in a timezone, or once) and identities
    (made and tied to the agent, untied), each checked against the API."""
    url, _ = stack
    d, http = browser, api(url)
    made = http.post("/v1/agents/", json={"name": "Planner", "model": "openai/gpt-test"}).json()
    agent_id = made["id"]

    def schedules() -> list[dict[str, Any]]:
        return list(http.get(f"/v1/agents/{agent_id}/schedules").json())

    signed_in(d, url, f"#/agents/{agent_id}")
    page_is(d, "agent")
    open_details(d, "Schedule a message")
    labelled(d, "Message to send").send_keys("Weekly trail report, please.")
    labelled(d, "Cron (repeats)").send_keys("0 9 * * 1")
    zone = labelled(d, "Timezone")
    zone.clear()
    zone.send_keys("Europe/Paris")
    press(d, "Schedule")
    until(d, lambda d: len(schedules()) == 1)
    (weekly,) = schedules()
    assert weekly["schedule"] == {
        "type": "recurring",
        "cron": "0 9 * * 1",
        "timezone": "Europe/Paris",
    }
    until(d, lambda d: "Weekly trail report, please." in d.page_source)
    labelled(d, "Message to send").send_keys("Once, in 2030.")
    d.execute_script("arguments[0].value = '2030-01-01T10:00'", labelled(d, "Or once, at"))
    press(d, "Schedule")
    until(d, lambda d: len(schedules()) == 2)
    assert {s["schedule"]["type"] for s in schedules()} == {"recurring", "one-time"}
    accessible(d, "schedules")
    tap(d, "[aria-label^='Delete the schedule “Weekly']")
    until(d, lambda d: [s["schedule"]["type"] for s in schedules()] == ["one-time"])
    # An identity, made and tied, then untied.
    open_details(d, "Add an identity")
    labelled(d, "Identifier key").send_keys("ada@example.com")
    labelled(d, "Identity name").send_keys("Ada")
    press(d, "Add identity")

    def tied() -> list[str]:
        return [
            i["name"] for i in http.get(f"/v1/agents/{agent_id}").json().get("identities") or []
        ]

    until(d, lambda d: tied() == ["Ada"])
    until(d, lambda d: d.find_elements("css selector", "[aria-label='Untie Ada']"))
    tap(d, "[aria-label='Untie Ada']")
    until(d, lambda d: tied() == [])


def test_an_agent_of_1000_messages_renders_quickly(
    stack: tuple[str, FakeLLM], browser: Any
) -> None:
    url, _ = stack
    http = api(url)
    # Its messages are not embedded: 1,000 embeddings on the local model would share the
    # two cores with the pages being timed.
    body = {
        "name": "Long talk",
        "model": "openai/gpt-test",
        "context_window_limit": 1_000_000,
        "metadata": {"cairn_message_embeddings": False},
    }
    agent = http.post("/v1/agents/", json=body).json()
    said = [
        {
            "role": "user" if n % 2 == 0 else "assistant",
            "content": f"Message {n}: the ridge, the trail and the weather again.",
        }
        for n in range(1000)
    ]
    captured = http.post(
        f"/v1/agents/{agent['id']}/messages/capture",
        json={"messages": said, "add_to_context": True},
    )
    assert captured.status_code == 200, captured.text
    d = browser
    d.get(f"{url}/console")
    d.execute_script(f"sessionStorage.setItem('cairn.console.key', '{KEY}')")
    # The page the tab opens on (the agents, signed in from the test before) is drawn
    # first: its calls would otherwise still hold the stack when the timed page starts.
    until(d, lambda d: d.execute_script("return document.body.dataset.page"))
    times: dict[str, list[float]] = {"agent": [], "chat": []}
    for _ in range(3):
        for page, suffix in (("agent", ""), ("chat", "/chat")):
            d.get(f"{url}/console#/agents/{agent['id']}{suffix}")
            page_is(d, page)
            times[page].append(float(d.execute_script("return document.body.dataset.renderMs")))
    items = d.execute_script("return document.querySelectorAll('li').length")
    assert items >= 100  # the chat shows the last 100 messages
    d.get(f"{url}/console#/agents/{agent['id']}")
    page_is(d, "agent")
    assert d.execute_script("return document.querySelectorAll('ol.messages li').length") >= 1000
    shot(d, "8-agent-1000-messages")
    measured = {page: {"runs_ms": ms, "median_ms": sorted(ms)[1]} for page, ms in times.items()}
    measured["load"] = list(os.getloadavg())  # type: ignore[assignment]
    (SHOTS / "render-times.json").write_text(json.dumps(measured, indent=2))
    print("console render times:", json.dumps(measured))
