"""A compaction step: summarise the oldest part of the context (`compaction.py` decides
what and asks how), keep the rest, and go on with the turn unless it was all it was for."""

from __future__ import annotations

from cairn.domain.messages import ImageContent
from cairn.domain.runs import step_command
from cairn.llm.deadline import DeadlineReached
from cairn.llm.types import LLMError
from cairn.run.steps import compaction
from cairn.run.steps.image_descriptions import described
from cairn.run.steps.step_work import StepWork
from cairn.store.checkpoints import Checkpoint


def compaction_step(work: StepWork) -> Checkpoint | None:
    """Summarise the oldest part of the context; None when there is nothing to evict."""
    state = work.state
    settings = compaction.settings_of(work.agent)
    cut = compaction.cut_index(state.context, settings)
    evicted = state.context[1:cut]
    if not evicted:
        return None
    work.step = work.step.model_copy(update={"kind": "compaction"})
    if any(isinstance(p, ImageContent) for m in evicted for p in m.content):
        # The summary keeps what the images showed: the transcript is text, so each image
        # goes into it as its description (made once; the cache serves the turns too).
        clients = work.parts.model.client
        evicted = described(
            state.org_id,
            evicted,
            work.parts.db,
            work.parts.settings,
            lambda config: clients(state.org_id, config),
        )
    request = compaction.summary_request(work.agent, evicted)
    try:
        response = work.ask(request)
    except DeadlineReached:
        raise
    except LLMError as err:
        return work.failed("llm_api_error", f"summarising failed: {err}", kind=err.kind)
    summary = compaction.summary_message(
        work.agent, response.text, now=work.now, run_id=state.run.id, step_id=work.step.id
    )
    work.step = work.step.model_copy(
        update={
            **response.usage.step_fields(),
        }
    )
    kept = state.context[cut:]
    ids = [state.context[0].id, summary.id, *(m.id for m in kept), *(m.id for m in work.inputs)]
    only = bool(state.run.request_config.get("compact_only"))  # summarise on request
    cp = work.checkpoint(
        status="completed" if only else "running",
        stop_reason="end_turn" if only else None,
        usage=response,
        message_ids=ids,
        new=[summary, *work.inputs],
    )
    if not only:
        cp.next_command = step_command(state.run, state.step_index + 1)
    return cp
