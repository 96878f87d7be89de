"""What a Letta import reports as it goes (its progress callback) and when it ends; apart, so
the import's parts (files, memory) use it without importing the import."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass
class Report:
    finished: bool = True  # False: stopped for time; run again to go on
    wrote: bool = False  # this run has written something (so it has made progress)
    imported: dict[str, int] = field(default_factory=dict)
    already: dict[str, int] = field(default_factory=dict)  # there from an earlier run
    skipped: list[str] = field(default_factory=list)  # what did not come over, and why

    def count(self, phase: str, new: bool) -> None:
        self.add(phase, int(new), int(not new))

    def add(self, phase: str, new: int, old: int) -> None:
        self.imported[phase] = self.imported.get(phase, 0) + new
        self.already[phase] = self.already.get(phase, 0) + old
        self.wrote = self.wrote or new > 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "finished": self.finished,
            "imported": self.imported,
            "already_there": self.already,
            "skipped": self.skipped,
        }
