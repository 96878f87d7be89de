"""Postgres persistence: one module of plain SQL per aggregate, all scoped by organization.

Repository functions take a connection first, so several of them can share one transaction
(the step's checkpoint is one).
"""

from cairn.store.db import Connection, Database

# Migrations (`cairn.store.migrate`) are imported by what applies them, not every request.

__all__ = ["Connection", "Database"]
