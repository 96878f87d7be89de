"""Folders and files in agent files: exported with their text and the agent's views as
Letta writes them, imported into another organization (and again into the same one, where
Letta suffixes the taken folder name), re-embedded there, attached with the file tools."""

from __future__ import annotations

import json
import re

from letta_client import Letta

from tests.api.conftest import Stack
from tests.api.test_agent_messages import stack_other_org_client
from tests.api.test_files import MARKDOWN, passages_of, pdf, settled

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def exported_agent(client: Letta) -> tuple[str, str]:
    folder = client.folders.create(name="kb", description="manuals", instructions="read me")
    guide = client.folders.files.upload(folder.id, file=("guide.md", MARKDOWN.encode(), None))
    report = client.folders.files.upload(folder.id, file=("report.pdf", pdf("Trail north."), None))
    for made in (guide, report):
        assert settled(client, folder.id, made.id).processing_status == "completed"
    agent = client.agents.create(name="reader", llm_config=LLM)  # type: ignore[arg-type]
    client.agents.folders.attach(folder.id, agent_id=agent.id)  # opens both, as in Letta
    assert all(f.is_open for f in client.agents.files.list(agent.id))
    client.agents.files.close(report.id, agent_id=agent.id)
    return agent.id, client.agents.export_file(agent.id)


def test_an_agent_file_carries_folders_files_and_views_as_letta_writes_them(
    stack: Stack,
) -> None:
    client = stack.client()
    _, text = exported_agent(client)
    data = json.loads(text)
    (source,) = data["sources"]
    assert source["id"] == "source-0" and source["name"] == "kb"
    assert source["instructions"] == "read me" and source["embedding_config"]["embedding_model"]
    by_name = {f["file_name"]: f for f in data["files"]}
    assert set(by_name) == {"kb/guide.md", "kb/report.pdf"}
    assert by_name["kb/report.pdf"]["content"].strip() == "Trail north."
    assert all(
        re.fullmatch(r"file-\d+", f["id"]) and f["source_id"] == "source-0" for f in data["files"]
    )
    (agent,) = data["agents"]
    assert agent["source_ids"] == ["source-0"]
    views = {v["file_name"]: v for v in agent["files_agents"]}
    assert views["kb/guide.md"]["is_open"] and not views["kb/report.pdf"]["is_open"]
    assert views["kb/guide.md"]["visible_content"].startswith("[Viewing file start")


def test_an_imported_agent_gets_its_folders_files_and_views_back(stack: Stack) -> None:
    client = stack.client()
    _, text = exported_agent(client)
    theirs = stack_other_org_client(stack)
    (new_id,) = theirs.agents.import_file(file=("reader.af", text.encode())).agent_ids
    (folder,) = list(theirs.agents.folders.list(new_id))
    assert folder.name == "kb" and folder.instructions == "read me"
    made = list(theirs.folders.files.list(folder.id))
    assert sorted(f.file_name for f in made) == ["kb/guide.md", "kb/report.pdf"]
    for file in made:
        done = settled(theirs, folder.id, file.id)
        assert done.processing_status == "completed" and done.chunks_embedded
    assert {"open_files", "grep_files", "semantic_search_files"} <= {
        t.name for t in theirs.agents.tools.list(new_id)
    }
    views = {f.file_name: f for f in theirs.agents.files.list(new_id)}
    assert views["kb/guide.md"].is_open and not views["kb/report.pdf"].is_open
    again = client.agents.import_file(file=("reader.af", text.encode())).agent_ids
    names = sorted(f.name for f in client.folders.list())
    assert names[0] == "kb" and re.fullmatch(r"kb_[0-9a-f]{8}", names[1])  # Letta's suffix
    (copy_folder,) = list(client.agents.folders.list(again[0]))
    assert copy_folder.name == names[1]
    assert passages_of(stack, copy_folder.id) or settled(
        client, copy_folder.id, next(iter(client.folders.files.list(copy_folder.id))).id
    )
