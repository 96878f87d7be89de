"""A Letta organization's memory imported: its agents' messages and context windows, its
archives with their passages (embedded again where the model differs), and its runs. Each
page is its own transaction; what is already here is counted, not written again."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from cairn.config import Settings
from cairn.domain.configs import EmbeddingConfig
from cairn.domain.indexing import indexed_text
from cairn.domain.messages import Message
from cairn.domain.passages import Archive, Passage
from cairn.domain.runs import TERMINAL_RUN_STATUSES, Run
from cairn.embeddings.providers import embedder_for
from cairn.letta_import import store_source as letta_source
from cairn.llm import endpoints
from cairn.store import (
    agents,
    archives,
    messages,
    runs,
)
from cairn.store.db import Database

if TYPE_CHECKING:
    from cairn.letta_import.report import Progress, Report

PAGE = 500  # messages or passages read and written per transaction


def known_fields(row: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """The row's values the model has a field for; Letta's nulls leave Cairn's defaults."""
    return {k: v for k, v in row.items() if k in model.model_fields and v is not None}


def first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


def same_model(have: EmbeddingConfig | None, wanted: EmbeddingConfig) -> bool:
    return have is not None and (have.embedding_model, have.embedding_dim) == (
        wanted.embedding_model,
        wanted.embedding_dim,
    )


class MemoryImport:
    def __init__(
        self,
        db: Database,
        source: Any,
        org: str,
        report: Report,
        tick: Progress,
        settings: Settings,
    ) -> None:
        self.db, self.source, self.org, self.report, self.tick = db, source, org, report, tick
        self.settings = settings

    def messages(self, rows: list[dict[str, Any]]) -> None:
        total = len(rows)
        for n, row in enumerate(rows, 1):
            after = -1
            while True:
                page = letta_source.messages(
                    self.source, row["id"], after_sequence=after, limit=PAGE
                )
                if not page:
                    break
                converted = [m for m in (self._message(row["id"], r) for r in page) if m]
                with self.db.transaction() as conn:
                    if agents.get(conn, self.org, row["id"]) is None:
                        break  # the agent was skipped: so are its messages
                    before = {
                        m.id for m in messages.get_many(conn, self.org, [m.id for m in converted])
                    }
                    messages.insert(conn, converted)
                self.report.add("messages", len(converted) - len(before), len(before))
                after = page[-1]["sequence_id"]
            self.tick("messages", n, total)

    def _message(self, agent_id: str, row: dict[str, Any]) -> Message | None:
        content = row["content"]
        if not content and row["text"]:
            content = [{"type": "text", "text": row["text"]}]  # the legacy text column
        data = known_fields(row, Message)
        data.update(organization_id=self.org, agent_id=agent_id, content=content or [])
        data.pop("sequence_id", None)
        data.pop("step_id", None)  # Letta's steps are not imported
        try:
            return Message.model_validate(data)
        except ValidationError as err:
            self.report.skipped.append(f"message {row['id']}: {err.errors()[0]['msg']}")
            return None

    def windows(self, rows: list[dict[str, Any]]) -> None:
        for n, row in enumerate(rows, 1):
            wanted = list(row["message_ids"] or ())
            with self.db.transaction() as conn:
                agent = agents.get(conn, self.org, row["id"])
                if agent is not None:
                    present = {m.id for m in messages.get_many(conn, self.org, wanted)}
                    missing = [i for i in wanted if i not in present]
                    if missing:
                        self.report.skipped.append(
                            f"agent {row['id']}: {len(missing)} context ids name no message"
                        )
                    window = [i for i in wanted if i in present]
                    changed = agent.message_ids != window
                    if changed:
                        # As a version of its own in the agent's history.
                        agents.update(
                            conn,
                            agent.model_copy(update={"message_ids": window}),
                            expected_version=agent.version,
                        )
                    self.report.count("context windows", changed)
            self.tick("context windows", n, len(rows))

    def archives(self) -> None:
        rows = letta_source.archives(self.source, self.org)
        for n, row in enumerate(rows, 1):
            attached = [a for a in row["agents"] or ()]
            with self.db.transaction() as conn:
                new = archives.get_archive(conn, self.org, row["id"]) is None
                if new:
                    archives.create_archive(
                        conn,
                        Archive.model_validate(
                            {**known_fields(row, Archive), "organization_id": self.org}
                        ),
                    )
                    for link in attached:
                        if agents.get(conn, self.org, link["agent_id"]) is not None:
                            archives.attach_archive(
                                conn,
                                self.org,
                                row["id"],
                                link["agent_id"],
                                is_owner=link["is_owner"],
                            )
            self.report.count("archives", new)
            self._passages(row)
            self.tick("archives", n, len(rows))
        self.runs()

    def runs(self) -> None:
        """Letta's runs as history: ended ones as they ended; one Letta never ended comes
        over cancelled (left open, it would hold its agent in Cairn)."""
        rows = letta_source.runs(self.source, self.org)
        for n, row in enumerate(rows, 1):
            with self.db.transaction() as conn:
                new = runs.get_run(conn, self.org, row["id"]) is None
                run = self._run(row) if new else None
                if run is not None and agents.get(conn, self.org, run.agent_id) is not None:
                    runs.create_run(conn, run)
                    runs.update_run(conn, run)
            self.report.count("runs", new)
            self.tick("runs", n, len(rows))

    def _run(self, row: dict[str, Any]) -> Run | None:
        ended = row["status"] in TERMINAL_RUN_STATUSES
        data = {**known_fields(row, Run), "organization_id": self.org}
        if not ended:
            data.update(
                status="cancelled",
                stop_reason="cancelled",
                completed_at=row["completed_at"] or row["created_at"],
            )
        try:
            return Run.model_validate(data)
        except ValidationError:  # a stop reason Cairn does not name: kept in the metadata
            metadata = {
                **(data.get("metadata") or {}),
                "letta_stop_reason": data.get("stop_reason"),
            }
        try:
            return Run.model_validate({**data, "stop_reason": None, "metadata": metadata})
        except ValidationError as err:
            self.report.skipped.append(f"run {row['id']}: {err.errors()[0]['msg']}")
            return None

    def _passages(self, archive: dict[str, Any]) -> None:
        after = ""
        while True:
            page = letta_source.passages(self.source, archive["id"], after_id=after, limit=PAGE)
            if not page:
                break
            made = self._embedded([p for p in (self._passage(archive, r) for r in page) if p])
            new = old = 0
            with self.db.transaction() as conn:
                for passage in made:
                    _, fresh = archives.insert_passage(conn, passage)
                    new, old = new + fresh, old + (not fresh)
            self.report.add("passages", new, old)
            after = page[-1]["id"]

    def _passage(self, archive: dict[str, Any], row: dict[str, Any]) -> Passage | None:
        config = row["embedding_config"] or archive["embedding_config"] or {}
        vector = json.loads(row["embedding"]) if row["embedding"] else None
        if vector is not None:
            vector = vector[: int(config.get("embedding_dim") or len(vector))]
        try:
            return Passage.model_validate(
                {
                    "id": row["id"],
                    "organization_id": self.org,
                    "archive_id": archive["id"],
                    "text": row["text"],
                    "embedding": vector,
                    "embedding_config": config or None,
                    "tags": list(row["tags"] or ()),
                    "metadata": row["metadata"] or {},
                    "created_at": row["created_at"],
                }
            )
        except ValidationError as err:
            self.report.skipped.append(f"passage {row['id']}: {err.errors()[0]['msg']}")
            return None

    def _embedded(self, page: list[Passage]) -> list[Passage]:
        """The page with the passages Letta embedded by another model or dimension than
        their archive's (its agents search with that one) embedded again, in one request
        per model; the rest keep Letta's vectors."""
        wanted = self._archive_config(page[0].archive_id) if page else None
        stale = [
            p for p in page if wanted is not None and not same_model(p.embedding_config, wanted)
        ]
        if not stale or wanted is None:
            return page
        try:
            with self.db.connection() as conn:
                exists = {p.id for p in stale if archives.get_passage(conn, self.org, p.id)}
            todo = [p for p in stale if p.id not in exists]  # embedded by an earlier run
            home = endpoints.rehome_embedding(wanted, self.settings)
            vectors = embedder_for(home, self.settings).embed(
                [indexed_text(p.text, p.created_at) for p in todo]
            )
        except Exception as err:  # no key or no provider here: keep them, searchable by text
            self.report.skipped.append(
                f"{len(stale)} passages of archive {stale[0].archive_id} not embedded again "
                f"with {wanted.embedding_model}: {err}"
            )
            return page
        again = {p.id: v for p, v in zip(todo, vectors, strict=True)}
        self.report.add("passages embedded again", len(again), 0)
        return [
            p.model_copy(update={"embedding": again[p.id], "embedding_config": wanted})
            if p.id in again
            else p
            for p in page
        ]

    def _archive_config(self, archive_id: str) -> EmbeddingConfig | None:
        with self.db.connection() as conn:
            archive = archives.get_archive(conn, self.org, archive_id)
        return archive.embedding_config if archive else None
