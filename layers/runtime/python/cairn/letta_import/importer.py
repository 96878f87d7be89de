"""Importing a whole Letta 0.16.x database (`cairn-import-letta postgresql://...`).

Phases, per organization: the organization, its own providers (their keys opened with the
Letta server's encryption key if it had one, and put in Cairn's vault), tools, blocks,
agents (with their blocks, tools and tags), identities (with their links), messages
(recall memory, in Letta's order), context windows, archives and their passages, groups.
Letta's ids are kept, so every phase writes only what is not there yet: running the import
twice changes nothing, and an import killed at any point goes on where it stopped when run
again. Embeddings are copied (Letta pads them to 4096; the agent's `embedding_dim` says
how many are real), not recomputed, since each imported agent keeps its embedding model.
The Letta database is only read (a read-only session).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from cairn.config import Settings
from cairn.domain.agents import Agent
from cairn.domain.blocks import Block, BlockHistoryEntry
from cairn.domain.groups import Group
from cairn.domain.identities import Identity
from cairn.domain.providers import RESERVED, Provider, hint
from cairn.domain.tenancy import Organization
from cairn.domain.tool_rules import ToolRule
from cairn.domain.tools import Tool
from cairn.errors import InvalidArgumentError
from cairn.letta_import import store_source as letta_source
from cairn.letta_import.files import FilesImport
from cairn.letta_import.keys import SealedKeyError, open_key
from cairn.letta_import.memory import (
    MemoryImport,
    first_error,
    known_fields,
)
from cairn.letta_import.report import Progress, Report
from cairn.llm import endpoints
from cairn.run.ports import DocumentStore
from cairn.run.provider_vault import ProviderVault
from cairn.sealing import Sealer
from cairn.services.providers import named as provider_named
from cairn.store import (
    agent_secrets,
    agents,
    blocks,
    groups,
    tools,
)
from cairn.store import identities as identity_rows
from cairn.store import providers as provider_rows
from cairn.store import tenancy as tenancy_rows
from cairn.store.db import Connection, Database
from cairn.tools.registry import BUILTIN_TOOLS

_RULE: TypeAdapter[Any] = TypeAdapter(ToolRule)


class _Paused(Exception):
    """Out of time (a Lambda invocation ending): the next run goes on from here."""


def import_letta(
    db: Database,
    source_url: str,
    parts: ImportParts,
    progress: Progress | None = None,
    *,
    stop: Callable[[], bool] | None = None,
    settings: Settings | None = None,
) -> Report:
    """Import everything; with `stop`, end early (`finished` false) between two units of
    work once it says so: a run in a Lambda invocation leaves before its deadline and the
    next invocation goes on (nothing is done twice). `parts` are the process's, given by
    its assembly (`assembly/operator.import_letta`)."""
    report = Report()
    shown = progress or (lambda phase, done, total: None)

    def tick(phase: str, done: int, total: int) -> None:
        # Called between units (no transaction open). Only once this run has written
        # something: walking past what is already there is quick, and must not use up a
        # run that then leaves off having done nothing.
        shown(phase, done, total)
        if stop is not None and report.wrote and stop():
            raise _Paused

    settings = settings or Settings.from_env()
    try:
        _import(db, source_url, report, tick, settings, parts)
    except _Paused:
        report.finished = False
    return report


@dataclass(frozen=True)
class ImportParts:
    """What an import writes through besides the database."""

    vault: ProviderVault  # where imported providers' keys go
    letta_key: str | None  # the Letta server's LETTA_ENCRYPTION_KEY: opens what it encrypted
    sealer: Sealer  # what agents' secrets are sealed with here (the API's)
    documents: DocumentStore  # where files' originals go


def _import(
    db: Database,
    source_url: str,
    report: Report,
    tick: Progress,
    settings: Settings,
    keys: ImportParts,
) -> None:
    with letta_source.connect(source_url) as source:
        if (found := letta_source.revision(source)) is None:
            raise ValueError("not a Letta database: it has no alembic_version table")
        if found != "39577145c45d":
            report.skipped.append(f"schema revision {found} is not 0.16.1's: read as 0.16.1's")
        for org in letta_source.organizations(source):
            _organization(db, org, report)
            _Org(db, source, org["id"], report, tick, settings, keys).run()


def _organization(db: Database, org: dict[str, Any], report: Report) -> None:
    with db.transaction() as conn:
        new = tenancy_rows.get_organization(conn, org["id"]) is None
        if new:
            tenancy_rows.create_organization(
                conn, Organization(id=org["id"], name=org["name"], created_at=org["created_at"])
            )
    report.count("organizations", new)


class _Org:
    def __init__(
        self,
        db: Database,
        source: Any,
        org: str,
        report: Report,
        tick: Progress,
        settings: Settings,
        keys: ImportParts,
    ) -> None:
        self.db, self.source, self.org, self.report, self.tick = db, source, org, report, tick
        self.settings, self.keys = settings, keys
        self.tool_ids: dict[str, str] = {}  # Letta tool id -> Cairn tool id

    def run(self) -> None:
        self.providers()
        self.tools()
        self.blocks()
        agent_rows = letta_source.agents(self.source, self.org)
        self.agents(agent_rows)
        self.identities()
        memory = MemoryImport(self.db, self.source, self.org, self.report, self.tick, self.settings)
        memory.messages(agent_rows)
        memory.windows(agent_rows)
        memory.archives()
        FilesImport(
            self.db, self.source, self.org, self.report, self.tick, self.keys.documents
        ).run()
        self.groups()

    def providers(self) -> None:
        rows = letta_source.providers(self.source, self.org)
        for n, row in enumerate(rows, 1):
            with self.db.connection() as conn:
                new = provider_rows.get(conn, self.org, row["id"]) is None
                taken = new and provider_rows.by_name(conn, self.org, row["name"]) is not None
            if not new:
                self.report.count("providers", False)
            elif (made := self._provider(row, taken)) is not None:
                # The key first (on AWS a secret named by the provider's id, whose value a
                # second sealing after a crash replaces), then the row.
                sealed = self.keys.vault.seal(*made)
                with self.db.transaction() as conn:
                    provider_rows.create(conn, sealed)
                self.report.count("providers", True)
            self.tick("providers", n, len(rows))

    def _provider(self, row: dict[str, Any], taken: bool) -> tuple[Provider, dict[str, str]] | None:
        """The provider and its key, or None (and why, in the report)."""
        named = f"provider {row['name']} ({row['provider_type']})"
        if taken or row["name"] in RESERVED:
            why = "a provider of that name exists" if taken else "the name is Cairn's own"
            self.report.skipped.append(f"{named}: {why}; add it again under another name")
            return None
        try:
            secret = {"api_key": open_key(row["api_key"] or "", self.keys.letta_key)}
            if row["access_key"]:
                secret["access_key"] = open_key(row["access_key"], self.keys.letta_key)
        except SealedKeyError as err:
            self.report.skipped.append(f"{named}: its key: {err}")
            return None
        fields = {
            **known_fields(row, Provider),
            "organization_id": self.org,
            "key_hint": hint(secret["api_key"]),
        }
        try:
            return Provider.model_validate(fields), secret
        except ValidationError as err:
            self.report.skipped.append(f"{named}: {first_error(err)}")
            return None

    def identities(self) -> None:
        """After agents and blocks: an identity comes with its links to those that came."""
        rows = letta_source.identities(self.source, self.org)
        for n, row in enumerate(rows, 1):
            fields = {
                **known_fields(row, Identity),
                "organization_id": self.org,
                "agent_ids": [],
                "block_ids": [],
            }
            try:
                identity = Identity.model_validate(fields)
            except ValidationError as err:
                self.report.skipped.append(f"identity {row['id']}: {first_error(err)}")
                self.tick("identities", n, len(rows))
                continue
            with self.db.transaction() as conn:
                new = identity_rows.get(conn, self.org, identity.id) is None
                if new:
                    identity_rows.create(conn, identity)
                    # Links to what did not come over (a skipped agent) are left out.
                    for kind in ("agent", "block"):
                        ids = list(row[f"{kind}_ids"])
                        identity_rows.link(conn, self.org, identity.id, kind, ids)
            self.report.count("identities", new)
            self.tick("identities", n, len(rows))

    def tools(self) -> None:
        rows = letta_source.tools(self.source, self.org)
        for n, row in enumerate(rows, 1):
            name = row["name"]
            with self.db.transaction() as conn:
                existing = tools.get_by_name(conn, self.org, name)
                if row["tool_type"] != "custom" or name in BUILTIN_TOOLS:
                    if name in BUILTIN_TOOLS:  # Cairn's own built-in stands in for Letta's
                        tool = existing or tools.upsert(conn, BUILTIN_TOOLS[name].as_tool(self.org))
                        self.tool_ids[row["id"]] = tool.id
                        self.report.count("tools", existing is None)
                    else:
                        self.report.skipped.append(
                            f"tool {name} ({row['tool_type']}): not a tool Cairn has"
                        )
                elif existing is not None:
                    self.tool_ids[row["id"]] = existing.id
                    self.report.count("tools", False)
                else:
                    made = Tool.model_validate(
                        {**known_fields(row, Tool), "organization_id": self.org}
                    )
                    tool = tools.upsert(conn, made)
                    self.tool_ids[row["id"]] = tool.id
                    self.report.count("tools", True)
            self.tick("tools", n, len(rows))

    def blocks(self) -> None:
        rows = letta_source.blocks(self.source, self.org)
        earlier: dict[str, list[BlockHistoryEntry]] = {}
        for entry in letta_source.block_history(self.source, self.org):
            earlier.setdefault(entry["block_id"], []).append(self._version(entry))
        for n, row in enumerate(rows, 1):
            with self.db.transaction() as conn:
                new = blocks.get(conn, self.org, row["id"]) is None
                if new:
                    made = Block.model_validate(
                        {**known_fields(row, Block), "organization_id": self.org}
                    )
                    created = blocks.create(conn, made)
                    blocks.prepend_history(conn, created, earlier.get(created.id, []))
            self.report.count("blocks", new)
            self.tick("blocks", n, len(rows))

    def _version(self, row: dict[str, Any]) -> BlockHistoryEntry:
        """A Letta block_history row; its actor (`letta_agent`, ...) as Cairn names them."""
        actor = str(row["actor_type"] or "")
        kind = "agent" if "agent" in actor else "system" if "system" in actor else "user"
        return BlockHistoryEntry.model_validate(
            {
                **known_fields(row, BlockHistoryEntry),
                "organization_id": self.org,
                "version": 0,
                "actor_type": kind,
            }
        )

    def agents(self, rows: list[dict[str, Any]]) -> None:
        secrets_of = self._secrets()
        for n, row in enumerate(rows, 1):
            with self.db.transaction() as conn:
                new = agents.get(conn, self.org, row["id"]) is None
                if new:
                    agent = self._agent(conn, row)
                    if agent is not None:
                        agents.create(conn, agent)
                        if secrets := secrets_of.get(agent.id):
                            agent_secrets.put(conn, self.keys.sealer, self.org, agent.id, secrets)
                        for block_id in row["block_ids"]:
                            blocks.attach(conn, self.org, agent.id, block_id)
                        for tool_id in row["tool_ids"]:
                            if tool_id in self.tool_ids:
                                tools.attach(conn, self.org, agent.id, self.tool_ids[tool_id])
            self.report.count("agents", new)
            self.tick("agents", n, len(rows))

    def _secrets(self) -> dict[str, dict[str, str]]:
        """Each agent's secrets, opened from Letta's sealing (one it cannot open is left
        out, and the report says whose and why)."""
        found: dict[str, dict[str, str]] = {}
        for row in letta_source.agent_secrets(self.source, self.org):
            try:
                value = open_key(row["value"] or "", self.keys.letta_key)
            except SealedKeyError as err:
                self.report.skipped.append(f"agent {row['agent_id']}: secret {row['key']}: {err}")
                continue
            found.setdefault(row["agent_id"], {})[row["key"]] = value
        return found

    def _agent(self, conn: Connection, row: dict[str, Any]) -> Agent | None:
        rules = []
        for rule in row["tool_rules"] or ():
            try:
                rules.append(_RULE.validate_python(rule))
            except ValidationError:
                self.report.skipped.append(
                    f"agent {row['id']}: tool rule {rule.get('type')} on "
                    f"{rule.get('tool_name')}: not a rule Cairn has"
                )
        data = {
            **known_fields(row, Agent),
            "organization_id": self.org,
            "tool_rules": rules,
            "tags": list(row["tags"]),
            "message_ids": [],
        }
        try:
            agent = Agent.model_validate(data)
        except ValidationError as err:
            self.report.skipped.append(f"agent {row['id']} ({row['name']}): {first_error(err)}")
            return None
        # Letta's endpoints for the providers this server holds keys for become this
        # server's (docs/outbound.md): the server's key never goes to the Letta server's.
        agent = agent.model_copy(
            update={
                "llm_config": endpoints.rehome_llm(agent.llm_config, self.settings),
                "embedding_config": agent.embedding_config
                and endpoints.rehome_embedding(agent.embedding_config, self.settings),
            }
        )
        try:  # a config that disagrees with its provider (or names one not imported)
            endpoints.check_agent(
                agent.llm_config,
                agent.embedding_config,
                self.settings,
                provider_named(conn, self.org, agent.llm_config),
            )
        except InvalidArgumentError as err:
            self.report.skipped.append(f"agent {row['id']} ({row['name']}): {err}")
            return None
        return agent

    def groups(self) -> None:
        rows = letta_source.groups(self.source, self.org)
        for n, row in enumerate(rows, 1):
            with self.db.transaction() as conn:
                new = groups.get(conn, self.org, row["id"]) is None
                members = list(row["member_ids"] or row["agent_ids"] or ())
                if new:
                    fields = {**known_fields(row, Group), "agent_ids": members}
                    groups.create(
                        conn, Group.model_validate({**fields, "organization_id": self.org})
                    )
            self.report.count("groups", new)
            self.tick("groups", n, len(rows))
