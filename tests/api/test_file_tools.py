"""Letta's file tools through the whole stack: a folder attached gives the agent the tools
and `<directories>` in its system prompt, its files opened as Letta opens them (and an
upload into it once read), within the open-files limit; detached, its views go; open_files
shows a window of a file there (least recently used closed first past max_files_open);
grep_files and semantic_search_files answer Letta's texts; the agent's file routes open and
close files as the tools do."""

from __future__ import annotations

from typing import Any

from letta_client import Letta

from tests.api.conftest import Stack
from tests.api.test_custom_tools import tool_return
from tests.api.test_files import settled
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
GUIDE = "\n".join(f"Step {n}: add stone {n} to the cairn." for n in range(1, 31)) + "\n"
NOTES = "Trail notes\nThe north trail floods in spring.\nBring water.\n"


def folder_with_files(client: Letta, *names: str) -> tuple[Any, dict[str, Any]]:
    folder = client.folders.create(name="kb")
    bodies = {"guide.txt": GUIDE, "notes.txt": NOTES}
    made = {
        n: client.folders.files.upload(
            folder.id, file=(n, (bodies.get(n) or f"{n}\n").encode(), "text/plain")
        )
        for n in names
    }
    for file in made.values():
        assert settled(client, folder.id, file.id).processing_status == "completed"
    return folder, made


def folder_with_files_in(client: Letta, folder_id: str, name: str) -> tuple[str, Any]:
    made = client.folders.files.upload(folder_id, file=(name, f"{name}\n".encode(), "text/plain"))
    return name, settled(client, folder_id, made.id)


def agent_with(client: Letta, folder_id: str, **extra: Any) -> Any:
    agent = client.agents.create(llm_config=LLM, **extra)  # type: ignore[arg-type]
    client.agents.folders.attach(folder_id, agent_id=agent.id)
    return agent


def system_of(stack: Stack) -> str:
    return stack.fake.requests[-1].system_text()


def test_attaching_a_folder_gives_the_file_tools_and_shows_its_files(stack: Stack) -> None:
    client = stack.client()
    folder, _ = folder_with_files(client, "guide.txt", "notes.txt")
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    state = client.agents.folders.attach(folder.id, agent_id=agent.id)
    assert state is not None
    names = {t.name for t in state.tools}
    assert {"open_files", "grep_files", "semantic_search_files"} <= names
    stack.fake.reply("hello")
    client.agents.messages.create(agent.id, input="hi")
    system = system_of(stack)
    # Its files open at once, as Letta opens them (insert_files_into_context_window).
    assert '<directory name="kb">' in system and "- current_files_open=2" in system
    assert '<file status="open" name="kb/guide.txt">' in system
    assert "1: Step 1: add stone 1 to the cairn." in system
    assert "- max_files_open=5" in system  # Letta's default for a 32k window
    detached = client.agents.folders.detach(folder.id, agent_id=agent.id)
    assert detached is not None
    assert not {"open_files", "grep_files"} & {t.name for t in detached.tools}
    assert list(client.agents.files.list(agent.id)) == []  # its views went with it
    client.agents.folders.attach(folder.id, agent_id=agent.id)  # afresh: open again
    assert sorted(f.file_name for f in client.agents.files.list(agent.id) if f.is_open) == [
        "kb/guide.txt",
        "kb/notes.txt",
    ]


def test_an_upload_into_an_attached_folder_opens_within_the_agents_limit(stack: Stack) -> None:
    client = stack.client()
    folder, _ = folder_with_files(client, "guide.txt", "notes.txt")
    agent = agent_with(client, folder.id, max_files_open=2)
    views = {f.file_name: f for f in client.agents.files.list(agent.id)}
    assert views["kb/guide.txt"].is_open and views["kb/notes.txt"].is_open
    # guide.txt read last: notes.txt is the least recently used of the two.
    client.agents.files.open(views["kb/guide.txt"].file_id, agent_id=agent.id)
    _, made = folder_with_files_in(client, folder.id, "c.txt")
    assert made.processing_status == "completed"
    shown = {f.file_name: f.is_open for f in client.agents.files.list(agent.id)}
    assert shown == {"kb/guide.txt": True, "kb/notes.txt": False, "kb/c.txt": True}


def test_open_files_shows_a_window_and_closes_the_least_recently_used(stack: Stack) -> None:
    client = stack.client()
    folder, _ = folder_with_files(client, "guide.txt", "notes.txt", "c.txt")
    agent = agent_with(client, folder.id, max_files_open=2)
    client.agents.files.close_all(agent.id)  # attaching opened two: the model starts afresh
    window = [{"file_name": "kb/guide.txt", "offset": 2, "length": 3}]
    stack.fake.reply("", call("open_files", file_requests=window))
    stack.fake.reply("", call("open_files", file_requests=[{"file_name": "kb/notes.txt"}]))
    stack.fake.reply("", call("open_files", file_requests=[{"file_name": "kb/c.txt"}]))
    stack.fake.reply("done")
    response = client.agents.messages.create(agent.id, input="read the guide")
    returns = [m.tool_return for m in response.messages if m.message_type == "tool_return_message"]
    assert returns == [
        "* Opened kb/guide.txt (lines 3-5)",
        "* Opened kb/notes.txt",
        "* Opened kb/c.txt\nNote: Closed 1 least recently used file(s) due to open file limit: "
        "kb/guide.txt",
    ]
    second = stack.fake.requests[1].system_text()  # the step after the first open
    assert '<file status="open" name="kb/guide.txt">' in second
    assert (
        "[Viewing lines 3 to 5 (out of 30 lines)]\n3: Step 3: add stone 3 to the cairn." in second
    )
    assert "6: Step 6" not in second
    last = system_of(stack)
    assert '<file status="closed" name="kb/guide.txt">' in last
    assert '<file status="open" name="kb/c.txt">' in last and "- current_files_open=2" in last
    listed = {f.file_name: f for f in client.agents.files.list(agent.id, limit=1)}  # paged
    assert {n for n, f in listed.items() if f.is_open} == {"kb/notes.txt", "kb/c.txt"}


def test_a_file_not_attached_or_out_of_range_is_an_error_the_model_reads(stack: Stack) -> None:
    client = stack.client()
    folder, _ = folder_with_files(client, "notes.txt")
    agent = agent_with(client, folder.id)
    stack.fake.reply("", call("open_files", file_requests=[{"file_name": "kb/nope.txt"}]))
    stack.fake.reply(
        "", call("open_files", file_requests=[{"file_name": "kb/notes.txt", "offset": 99}])
    )
    stack.fake.reply("ok")
    response = client.agents.messages.create(agent.id, input="open")
    returns = [m for m in response.messages if m.message_type == "tool_return_message"]
    assert [r.status for r in returns] == ["error", "error"]
    assert "kb/nope.txt not attached" in returns[0].tool_return
    assert "has only 3 lines, but requested offset 100 is out of range" in returns[1].tool_return


def test_grep_files_pages_matches_with_context(stack: Stack) -> None:
    client = stack.client()
    folder, _ = folder_with_files(client, "guide.txt", "notes.txt")
    agent = agent_with(client, folder.id)
    stack.fake.reply("", call("grep_files", pattern="stone", include="*guide*"))
    stack.fake.reply("", call("grep_files", pattern="stone", offset=20))
    stack.fake.reply("", call("grep_files", pattern="flood"))
    stack.fake.reply("", call("grep_files", pattern="("))
    stack.fake.reply("done")
    response = client.agents.messages.create(agent.id, input="grep")
    first, second, third, bad = [
        m for m in response.messages if m.message_type == "tool_return_message"
    ]
    assert first.tool_return.startswith(
        "Found 30 total matches across 1 files (showing matches 1-20 of 30)\n" + "=" * 80
    )
    assert "=== kb/guide.txt:2 ===\n  1: Step 1: add stone 1 to the cairn.\n> 2: Step 2" in (
        first.tool_return
    )
    assert first.tool_return.endswith(
        'To see more matches, call: grep_files(pattern="stone", offset=20)'
    )
    assert "(showing matches 21-30 of 30)" in second.tool_return
    assert second.tool_return.endswith("No more matches to show.")
    assert "=== kb/notes.txt:2 ===" in third.tool_return and "> 2: The north trail floods" in (
        third.tool_return
    )
    assert bad.status == "error" and "Invalid regex pattern" in bad.tool_return


def test_semantic_search_finds_chunks_by_meaning(stack: Stack) -> None:
    client = stack.client()
    folder, _ = folder_with_files(client, "guide.txt", "notes.txt")
    agent = agent_with(client, folder.id)
    stack.fake.reply("", call("semantic_search_files", query="flooding in spring", limit=2))
    stack.fake.reply("ok")
    found = tool_return(client.agents.messages.create(agent.id, input="search"))
    text = found.tool_return  # type: ignore[attr-defined]
    assert (
        text.startswith("Found 2 semantic matches in ")
        and "for query: 'flooding in spring'" in text
    )
    assert "=== kb/notes.txt (passage #1) ===" in text  # the nearest chunk comes first


def test_the_agents_file_routes_open_and_close_as_the_tools_do(stack: Stack) -> None:
    client = stack.client()
    folder, made = folder_with_files(client, "guide.txt", "notes.txt")
    agent = agent_with(client, folder.id, max_files_open=1)
    assert client.agents.files.open(made["guide.txt"].id, agent_id=agent.id) == []
    assert client.agents.files.open(made["notes.txt"].id, agent_id=agent.id) == ["kb/guide.txt"]
    opened = [f for f in client.agents.files.list(agent.id) if f.is_open]
    assert [f.file_name for f in opened] == ["kb/notes.txt"]
    assert opened[0].visible_content.startswith("[Viewing file start (out of 3 lines)]")
    client.agents.files.close(made["notes.txt"].id, agent_id=agent.id)
    assert [f.file_name for f in client.agents.files.list(agent.id, is_open=True)] == []
    client.agents.files.open(made["guide.txt"].id, agent_id=agent.id)
    assert client.agents.files.close_all(agent.id) == ["kb/guide.txt"]
    stack.fake.reply("hi")
    client.agents.messages.create(agent.id, input="hello")
    assert "- current_files_open=0" in system_of(stack)
