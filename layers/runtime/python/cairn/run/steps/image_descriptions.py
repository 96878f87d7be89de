"""Images for a model without vision: each image in the request is replaced by what the
operator's vision model (CAIRN_VISION_MODEL) says it shows (as a chat channel's photos
are). A description is made once per image (cached by content hash, so a step delivered
again, and every later turn, reuses it) and at most CAIRN_IMAGE_DESCRIPTIONS_PER_TURN new
ones a step; past that, or without a vision model, the model is told an image was there.

Which models lack vision is the operator's word (CAIRN_TEXT_ONLY_MODELS): Cairn does not
guess from a model's name.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

from cairn.config import Settings
from cairn.domain.configs import LLMConfig
from cairn.domain.messages import ImageContent, Message, TextContent
from cairn.llm import deadline
from cairn.llm.clients import LLMClient
from cairn.llm.types import LLMError, LLMRequest
from cairn.store import image_descriptions
from cairn.store.db import Database

logger = logging.getLogger(__name__)
PROMPT = (
    "Describe this image for someone who cannot see it, in two or three sentences: what "
    "it shows, any text in it, and anything a conversation about it would need."
)


def text_only(config: LLMConfig, settings: Settings) -> bool:
    listed = {m.strip() for m in settings.text_only_models.split(",") if m.strip()}
    return config.model in listed or (config.handle or "") in listed


def described(
    org_id: str,
    messages: list[Message],
    db: Database,
    settings: Settings,
    client_for: Callable[[LLMConfig], LLMClient],
) -> list[Message]:
    """The messages with each image replaced by its description (text)."""
    images = {_hash(p): p for m in messages for p in m.content if isinstance(p, ImageContent)}
    if not images:
        return messages
    with db.connection() as conn:
        words = image_descriptions.known(conn, org_id, list(images))
    budget = settings.image_descriptions_per_turn
    for key, image in images.items():
        if key in words or budget <= 0 or not settings.vision_model:
            continue
        budget -= 1
        made = _describe(image, settings, client_for)
        if made is not None:
            words[key] = made
            with db.connection() as conn:
                image_descriptions.put(conn, org_id, key, made, settings.vision_model)
    return [_replaced(m, words) for m in messages]


def _hash(image: ImageContent) -> str:
    return hashlib.sha256(str(image.source.get("data", "")).encode()).hexdigest()


def _replaced(message: Message, words: dict[str, str]) -> Message:
    if not any(isinstance(p, ImageContent) for p in message.content):
        return message
    parts = [
        TextContent(
            text=f"[Image: {words[_hash(p)]}]"
            if _hash(p) in words
            else "[Image: not described (no vision model, or over this turn's budget)]"
        )
        if isinstance(p, ImageContent)
        else p
        for p in message.content
    ]
    return message.model_copy(update={"content": parts})


def _describe(
    image: ImageContent, settings: Settings, client_for: Callable[[LLMConfig], LLMClient]
) -> str | None:
    from cairn.llm.catalog import resolve_model

    assert settings.vision_model is not None
    # A description needs no thinking (a thinking model would spend its budget on each one).
    config = resolve_model(settings.vision_model, settings).model_copy(
        update={"enable_reasoner": False}
    )
    ask = Message(
        organization_id="org-00000000-0000-4000-8000-000000000000",
        agent_id="agent-00000000-0000-4000-8000-000000000000",
        role="user",
        content=[TextContent(text=PROMPT), image],
    )
    system = ask.model_copy(update={"role": "system", "content": [TextContent(text=PROMPT)]})
    try:
        with deadline.bounded(settings.llm_timeout_seconds):
            answer = client_for(config).complete(LLMRequest(config=config, messages=[system, ask]))
    except LLMError as err:  # the image stays undescribed this time; the turn goes on
        logger.warning("describing an image with %s failed: %s", settings.vision_model, err)
        return None
    return answer.text.strip() or None
