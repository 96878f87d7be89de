"""Cairn's error hierarchy, mapped once to HTTP statuses and Letta's error bodies."""

from __future__ import annotations


class CairnError(Exception):
    status_code = 500


class InvalidArgumentError(CairnError):
    status_code = 400


class NotFoundError(CairnError):
    status_code = 404


class ConflictError(CairnError):
    status_code = 409


class VersionConflictError(ConflictError):
    """An optimistic write named a version that is no longer current: reload and retry."""
