"""The ToolContext a step hands to built-in tools: its core memory and its searches."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from cairn.config import Settings
from cairn.domain.blocks import Block
from cairn.domain.configs import EmbeddingConfig
from cairn.domain.folders import AgentFolder, FileAgent
from cairn.domain.ids import stable_id
from cairn.domain.messages import Message
from cairn.domain.passages import Archive, Passage
from cairn.domain.runs import OutboxCommand
from cairn.domain.schedules import Schedule, check_room, make_schedule
from cairn.domain.tools import Tool
from cairn.embeddings.base import Embedder
from cairn.memory.edits import CoreMemory, MemoryEditError
from cairn.run.backends import search, voice_memory
from cairn.run.backends.agent_messages import Messenger
from cairn.run.backends.agent_tools import AgentTools
from cairn.run.backends.custom_tools import run_in_sandbox, secrets_environment
from cairn.run.backends.file_tools import FileWork
from cairn.run.ports import ExternalTools
from cairn.run.steps.state import StepState
from cairn.sealing import Sealer
from cairn.store import folders, schedules, tenancy
from cairn.store.db import Database
from cairn.tools.context import current_call
from cairn.tools.sandbox import (
    DEFAULT_TIMEOUT_SECONDS,
    Sandbox,
    SandboxResult,
)

logger = logging.getLogger(__name__)


@dataclass
class StepToolContext(search.SearchTools, AgentTools):
    state: StepState
    db: Database
    now: datetime
    memory: CoreMemory
    sandbox: Sandbox  # the tool sandbox assembly chose (the jail locally, a function on AWS)
    sealer: Sealer | None = None  # None: the agent's secrets are not handed to its tools
    settings: Settings | None = None  # for MCP calls: their timeout and outbound policy
    embedder: Embedder | None = None
    tool_timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    new_passages: list[Passage] = field(default_factory=list)
    new_archive: Archive | None = None
    messenger: Messenger | None = None  # runs other agents' turns (None: not here)
    # The embedder of a folder's config (its chunks were embedded with it).
    embedder_for: Callable[[EmbeddingConfig | None], Embedder] | None = None
    files: FileWork = field(init=False)
    # Registers a schedule with what fires it on time (EventBridge Scheduler), if any.
    scheduler: Callable[[Schedule], object] | None = None
    # What the checkpoint starts besides its continuation (messages to other agents).
    outgoing: list[OutboxCommand] = field(default_factory=list)
    # Calls tools served elsewhere (an MCP server's), given at assembly (None: none here).
    external_tools: ExternalTools | None = None

    # -- files ------------------------------------------------------------------------------

    def __post_init__(self) -> None:
        # Made here, not on first use: parallel built-ins (grep, search) share it.
        agent = self.state.agent
        self.files = FileWork(
            self.db,
            agent.organization_id,
            self.state.folders,
            max_files_open=agent.max_files_open,
            context_window=agent.llm_config.context_window,
            now=self.now,
            embedder_for=self._folder_embedder,
        )

    def _folder_embedder(self, folder: AgentFolder) -> Embedder | None:
        if self.embedder_for is None:
            return self.embedder
        with self.db.connection() as conn:
            found = folders.get(conn, self.state.agent.organization_id, folder.id)
        return self.embedder_for(found.embedding_config) if found else None

    def open_files(
        self, requests: list[tuple[str, int | None, int | None]], *, close_all_others: bool
    ) -> str:
        return self.files.open_files(requests, close_all_others=close_all_others)

    def grep_files(
        self, pattern: str, *, include: str | None, context_lines: int | None, offset: int | None
    ) -> str:
        return self.files.grep_files(
            pattern, include=include, context_lines=context_lines, offset=offset
        )

    def semantic_search_files(self, query: str, limit: int) -> str:
        return self.files.semantic_search_files(query, limit)

    def file_views(self) -> list[FileAgent]:
        """The views the file tools changed, for the checkpoint."""
        return list(self.files.changed.values())

    # -- schedules ----------------------------------------------------------------------

    def schedule_message(
        self, message: str, *, run_at: str | None, cron: str | None, timezone: str | None
    ) -> str:
        agent, run = self.state.agent, self.state.run
        when = None
        if run_at:
            try:
                when = datetime.fromisoformat(run_at)
            except ValueError:
                raise ValueError(f"run_at: `{run_at}` is not an ISO date and time") from None
        # Its id comes from the call: a step delivered again finds the schedule it made.
        made = make_schedule(
            agent.organization_id,
            agent.id,
            message,
            run_at=when,
            cron=cron,
            timezone=timezone or agent.timezone,
            now=self.now,
            schedule_id=stable_id("schedule", run.id, current_call()),
            **({"max_chars": self.settings.schedule_max_chars} if self.settings else {}),
        )
        with self.db.transaction() as conn:
            if schedules.get(conn, agent.organization_id, made.id) is None:  # not a redelivery
                active = schedules.active_for_agent(conn, agent.organization_id, agent.id)
                check_room(active, *([self.settings.agent_max_schedules] if self.settings else []))
            schedules.create(conn, made)
        if self.scheduler is not None:
            try:
                self.scheduler(made)
            except Exception:  # the sweeper's round fires it all the same
                logger.exception("EventBridge schedule for %s not made", made.id)
        assert made.next_run_at is not None
        local = made.next_run_at.astimezone(ZoneInfo(made.timezone))
        again = f", then on `{made.cron}`" if made.cron else ""
        return (
            f"Scheduled ({made.id}): the message comes to you at "
            f"{local.strftime('%Y-%m-%d %H:%M %Z')}{again}."
        )

    # -- voice memory -------------------------------------------------------------------

    def store_memories(self, chunks: list[tuple[int, int, str]]) -> str:
        lines = voice_memory.transcript(self._inputs())
        failed = []
        for start, end, context in chunks:
            try:
                self.archival_memory_insert(
                    voice_memory.chunk_text(lines, start, end, context), tags=None
                )
            except ValueError as err:
                failed.append(str(err))
        if failed:
            raise MemoryEditError("; ".join(failed))
        return ""

    def search_memory(
        self, keywords: list[str], start_minutes_ago: int | None, end_minutes_ago: int | None
    ) -> str:
        state = self.state
        query = voice_memory.latest_utterance([*state.context, *self._inputs()])
        start, end = voice_memory.window(self.now, start_minutes_ago, end_minutes_ago)
        archival: list[dict[str, Any]] = []
        if self.embedder is not None and state.archive is not None and query:
            archival = search.archival(
                self.db,
                state.agent,
                state.archive,
                query,
                self.embedder,
                tags=None,
                match_all=False,
                start=start,
                end=end,
                limit=voice_memory.ARCHIVAL_LIMIT,
            )
        by_keyword: dict[str, list[str]] | None = None
        if keywords:
            by_keyword = {}
            for keyword in keywords:
                hits = search.recall(
                    self.db,
                    state.agent,
                    keyword,
                    None,
                    roles=None,
                    start=None,
                    end=None,
                    limit=voice_memory.KEYWORD_LIMIT,
                    now=self.now,
                )["results"]
                if hits:
                    by_keyword[keyword] = [hit["content"] for hit in hits]
        return voice_memory.answer(archival, by_keyword)

    def _inputs(self) -> list[Message]:
        return self.state.run.input_messages()

    # -- custom tools -------------------------------------------------------------------

    def run_custom_tool(self, tool: Tool, args: dict[str, Any], tool_call_id: str) -> SandboxResult:
        # The blocks as this step has edited them so far; the agent's secrets in its env.
        return self._sandboxed(
            tool, args, tool_call_id, list(self.memory.blocks.values()), with_secrets=True
        )

    def _sandboxed(
        self,
        tool: Tool,
        args: dict[str, Any],
        call_id: str,
        blocks: list[Block],
        *,
        with_secrets: bool,
        extra: dict[str, str] | None = None,
    ) -> SandboxResult:
        agent = self.state.agent
        environment: dict[str, str] = dict(extra or {})
        with self.db.connection() as conn:
            hosts = tenancy.tool_hosts(conn, agent.organization_id)
            if with_secrets and self.sealer is not None:
                environment |= secrets_environment(conn, self.sealer, agent)
        return run_in_sandbox(
            self.sandbox,
            tool,
            args,
            call_id,
            agent=agent,
            blocks=blocks,
            default_timeout=self.tool_timeout_seconds,
            hosts=hosts,
            environment=environment,
        )

    def run_code(self, code: str, language: str, *, with_tools: bool) -> str:
        from cairn.tools import code_runner

        if language != "python":
            raise ValueError(
                f"run_code runs Python here; {language} is not supported (Cairn's sandbox has "
                "no other language)"
            )
        helpers = [
            t.source_code
            for t in self.state.tools
            if with_tools and t.tool_type == "custom" and t.source_code
        ]
        source, args = code_runner.program(code, helpers)
        runner = Tool(
            organization_id=self.state.agent.organization_id,
            name=code_runner.NAME,
            source_code=source,
        )
        # As Letta's E2B runs: run_code with no secrets; run_code_with_tools with the agent's
        # (its tools' calls need them) and LETTA_AGENT_ID; neither with memory blocks.
        done = self._sandboxed(
            runner,
            args,
            f"code-{uuid.uuid4().hex[:12]}",
            [],
            with_secrets=with_tools,
            extra={"LETTA_AGENT_ID": self.state.agent.id} if with_tools else None,
        )
        return code_runner.shown(done)

    def web_search(self, query: str, **options: Any) -> str:
        from cairn.tools.web_search import NO_KEY, search

        key = None
        if self.sealer is not None:
            with self.db.connection() as conn:
                key = secrets_environment(conn, self.sealer, self.state.agent).get("EXA_API_KEY")
        key = key or (self.settings.exa_api_key if self.settings else None)
        if not key:
            raise ValueError(NO_KEY)
        base_url = self.settings.exa_base_url if self.settings else None
        return search(query, key=key, base_url=base_url, **options)

    def fetch_webpage(self, url: str) -> str:
        from cairn import outbound
        from cairn.tools.webpage import fetch

        opened = outbound.networks(self.settings.outbound_networks if self.settings else "")
        return fetch(url, opened)

    def run_external_tool(self, tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
        if self.external_tools is None or self.sealer is None or self.settings is None:
            return {"success": False, "result": "MCP tools cannot run here."}
        return self.external_tools(self.db, self.sealer, self.settings, self.sandbox, tool, args)

    # -- recall and archival search: run/backends/search.py's SearchTools, over this -------------

    def search_scope(self) -> search.SearchScope:
        state = self.state
        return search.SearchScope(self.db, state.agent, state.archive, self.embedder, self.now)

    # -- archival ---------------------------------------------------------------------

    def _archive(self) -> Archive:
        archive = self.state.archive or self.new_archive
        if archive is None:
            archive = Archive(
                organization_id=self.state.org_id,
                name=f"{self.state.agent.name} archive",
                embedding_config=self.state.agent.embedding_config,
            )
            self.new_archive = archive
        return archive

    def archival_memory_insert(self, content: str, *, tags: list[str] | None) -> str:
        if not content.strip():
            raise MemoryEditError("`content` must not be empty.")
        if self.embedder is None:
            raise MemoryEditError("Archival memory needs an embedding model; none is configured.")
        passage = search.new_passage(
            self.state.agent, self._archive(), content, tags, self.embedder, created_at=self.now
        )
        if any(p.content_hash == passage.content_hash for p in self.new_passages):
            return search.DUPLICATE.format(id="stored earlier in this step")
        if self.state.archive is not None:
            with self.db.connection() as conn:
                existing = search.existing_copy(conn, passage)
            if existing is not None:
                return search.DUPLICATE.format(id=existing.id)
        self.new_passages.append(passage)
        return search.STORED
