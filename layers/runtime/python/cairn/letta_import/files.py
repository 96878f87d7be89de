"""A Letta organization's folders imported: its sources as folders (attached to the same
agents, with the file tools), its files with their text, their chunks with Letta's own
embeddings (no embedding call), and its agents' views of them. A file whose text Letta
does not have ends in `error` saying so. What is already here is counted, not written
again."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from cairn.domain.configs import EmbeddingConfig
from cairn.domain.folders import FileAgent, FileMetadata, FilePassage, Folder
from cairn.letta_import import store_source as letta_source
from cairn.run.ports import DocumentStore
from cairn.services.folders import attach_file_tools
from cairn.store import agents, files, folders
from cairn.store.db import Database

if TYPE_CHECKING:
    from cairn.letta_import.report import Progress, Report


class FilesImport:
    def __init__(
        self,
        db: Database,
        source: Any,
        org: str,
        report: Report,
        tick: Progress,
        documents: DocumentStore,
    ) -> None:
        self.db, self.source, self.org, self.report, self.tick = db, source, org, report, tick
        self.documents = documents

    def run(self) -> None:
        rows = letta_source.sources(self.source, self.org)
        for n, row in enumerate(rows, 1):
            self._folder(row)
            for file_row in letta_source.source_files(self.source, row["id"]):
                self._file(row, file_row)
            self.tick("folders", n, len(rows))
        self._views()

    def _folder(self, row: dict[str, Any]) -> None:
        with self.db.transaction() as conn:
            new = folders.get(conn, self.org, row["id"]) is None
            if new:
                name = row["name"]
                if folders.by_name(conn, self.org, name) is not None:
                    name = f"{name}_{row['id'][-8:]}"
                made = folders.create(
                    conn,
                    Folder(
                        id=row["id"],
                        organization_id=self.org,
                        name=name,
                        description=row["description"],
                        instructions=row["instructions"],
                        metadata=row["metadata"],
                        created_at=row["created_at"],
                        embedding_config=EmbeddingConfig.model_validate(row["embedding_config"]),
                    ),
                )
                assert made is not None
            for agent_id in row["agent_ids"] or ():
                if agents.get(conn, self.org, agent_id) is not None:
                    folders.attach(conn, self.org, row["id"], agent_id)
                    attach_file_tools(conn, self.org, agent_id)
        self.report.count("folders", new)

    def _file(self, folder: dict[str, Any], row: dict[str, Any]) -> None:
        with self.db.connection() as conn:
            if files.get(conn, self.org, row["id"]) is not None:
                self.report.count("files", False)
                return
        text = row["content"]
        file = FileMetadata(
            id=row["id"],
            organization_id=self.org,
            folder_id=folder["id"],
            file_name=row["file_name"] or row["original_file_name"] or row["id"],
            original_file_name=row["original_file_name"] or row["file_name"] or row["id"],
            file_type=row["file_type"] or "text/plain",
            file_size=row["file_size"] or len((text or "").encode()),
            object_key=f"{self.org}/{folder['id']}/{row['id']}",
            created_at=row["created_at"],
        )
        letta_chunks = letta_source.file_passages(self.source, row["id"])
        chunks = [self._passage(folder, row["id"], n, p) for n, p in enumerate(letta_chunks)]
        # Letta's originals are not in its database: the text stands in for one.
        self.documents.put(file.object_key, (text or "").encode(), "text/plain")
        with self.db.transaction() as conn:
            stored = files.create(conn, file)
            if stored is None:  # a file of that name in the folder already
                self.report.skipped.append(f"file {row['id']}: its name is taken in the folder")
                return
            if text is None:
                files.set_status(
                    conn,
                    self.org,
                    file.id,
                    "error",
                    error="Letta's database holds no text for this file",
                )
            else:
                files.put_content(conn, self.org, file.id, text)
                files.add_passages(conn, chunks)
                files.set_status(
                    conn, self.org, file.id, "completed", total=len(chunks), embedded=len(chunks)
                )
        self.report.count("files", True)
        self.report.add("file passages", len(chunks), 0)

    def _passage(
        self, folder: dict[str, Any], file_id: str, n: int, row: dict[str, Any]
    ) -> FilePassage:
        config = row["embedding_config"] or folder["embedding_config"]
        vector = json.loads(row["embedding"]) if row["embedding"] else []
        vector = vector[: int(config.get("embedding_dim") or len(vector))]
        return FilePassage(
            id=row["id"],
            organization_id=self.org,
            folder_id=folder["id"],
            file_id=file_id,
            chunk_index=n,
            text=row["text"],
            embedding=vector,
            embedding_config=config,
            created_at=row["created_at"],
        )

    def _views(self) -> None:
        views = []
        with self.db.connection() as conn:
            for row in letta_source.files_agents(self.source, self.org):
                if agents.get(conn, self.org, row["agent_id"]) is None:
                    continue
                views.append(
                    FileAgent.model_validate(
                        {**row, "folder_id": row["source_id"], "organization_id": self.org}
                    )
                )
        with self.db.transaction() as conn:
            files.put_views(conn, views)
