"""The originals of uploaded files in a directory (the local stack's data directory), so
they outlive a restart as the database does. Keys are the server's own
(`organization/folder/file`), never a client's name."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class DirectoryDocuments:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise ValueError(f"document key outside the store: {key!r}")
        return path

    def put(self, key: str, body: bytes, content_type: str) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Whole or not at all: written aside, then renamed over.
        fd, temporary = tempfile.mkstemp(dir=path.parent)
        with os.fdopen(fd, "wb") as out:
            out.write(body)
        os.replace(temporary, path)

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise KeyError(key) from None

    def delete(self, keys: list[str]) -> None:
        for key in keys:
            self._path(key).unlink(missing_ok=True)
