"""The model of a step: the client with the right key, the journaled call, the journal.

The server's keys call the server's providers; a model of one of the organization's own
providers (`provider_category` byok) is called with that organization's key, looked up by
the provider's name. A response with tool calls is journaled (keyed by run and step)
before any tool runs, so a redelivered step reuses it instead of asking again; the tools'
own results with outside effects are journaled the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cairn import faults, tracing
from cairn.config import Settings
from cairn.domain.configs import LLMConfig
from cairn.domain.providers import Provider
from cairn.domain.runs import JournalEntry
from cairn.llm import deadline
from cairn.llm.clients import LLMClient, client_for
from cairn.llm.types import LLMError, LLMRequest, LLMResponse, OnDelta
from cairn.run.steps.state import StepState
from cairn.store import step_journal
from cairn.store.db import Database

LLM_JOURNAL_KEY = "llm"

# (organization, provider name) -> the provider and its key, or None if it has none by that name.
ProviderKeyLookup = Callable[[str, str], "tuple[Provider, dict[str, str]] | None"]


# The GenAI conventions' provider names for Letta's endpoint types.
PROVIDERS = {
    "google_ai": "gcp.gemini",
    "google_vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
}


@dataclass(frozen=True)
class StepModel:
    db: Database
    settings: Settings
    llm_for: Callable[[LLMConfig], LLMClient]  # a client with the server's keys
    provider_keys: ProviderKeyLookup | None = None  # the organizations' own keys

    def client(self, org_id: str, config: LLMConfig) -> LLMClient:
        if config.provider_category != "byok":
            return self.llm_for(config)
        lookup = self.provider_keys
        found = lookup(org_id, config.provider_name or "") if lookup else None
        if found is None:
            raise LLMError(
                "auth",
                f"The provider `{config.provider_name}` is not configured "
                "for this organization (the providers API)",
            )
        return client_for(config, self.settings, found)

    def call(
        self,
        state: StepState,
        request: LLMRequest,
        journal: dict[str, dict[str, Any]],
        on_delta: OnDelta | None = None,
    ) -> LLMResponse:
        """The journaled response if there is one; else call, then journal before returning.

        A response without tool calls is not journaled: nothing runs before the checkpoint
        that stores it, so a retry after a crash only repeats the call (one round trip saved
        on every answering step).
        """
        if LLM_JOURNAL_KEY in journal:
            return LLMResponse.model_validate(journal[LLM_JOURNAL_KEY])
        faults.reached("before_llm")
        client = self.client(state.org_id, request.config)
        # One bound for the call and all its retries (CAIRN_LLM_TIMEOUT_SECONDS): a model
        # that hangs or crawls frees its worker well within the step's time (docs/tenancy.md).
        config = request.config
        with (
            tracing.span(
                f"chat {config.model}",
                kind=tracing.CLIENT,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": PROVIDERS.get(
                        config.model_endpoint_type, config.model_endpoint_type
                    ),
                    "gen_ai.request.model": config.model,
                },
            ) as span,
            deadline.bounded(self.settings.llm_timeout_seconds),
        ):
            response = deadline.retried(
                lambda: client.complete(request, on_delta), self.settings.llm_max_retries
            )
            span.set_attributes(
                {
                    "gen_ai.response.model": response.model or config.model,
                    "gen_ai.usage.input_tokens": response.usage.prompt_tokens,
                    "gen_ai.usage.output_tokens": response.usage.completion_tokens,
                    "gen_ai.response.finish_reasons": [response.finish_reason],
                }
            )
        if not response.tool_calls:
            return response
        with self.db.connection() as conn:
            # Two deliveries may race to the model; both go on with the one journaled first.
            entry = _entry(state, LLM_JOURNAL_KEY, response.model_dump(mode="json"))
            stored = step_journal.write_once(conn, entry)
        faults.reached("after_journal")
        return LLMResponse.model_validate(stored)

    def write_journal(self, state: StepState, key: str, payload: dict[str, Any]) -> None:
        with self.db.connection() as conn:
            step_journal.write(conn, _entry(state, key, payload))


def _entry(state: StepState, key: str, payload: dict[str, Any]) -> JournalEntry:
    return JournalEntry(
        organization_id=state.org_id,
        run_id=state.run.id,
        step_index=state.step_index,
        key=key,
        payload=payload,
    )
