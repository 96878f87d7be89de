"""Images in user messages, as Letta 0.16.1 takes them (`{"type": "image", "source": ...}`):
base64 data kept as sent, a URL fetched once by the server and kept as base64 (as Letta
converts it), so every later request (and every provider) sends the same bytes.

The URL is anyone's: it is fetched through the outbound-address policy (public addresses
only unless the operator opened a network; every redirect checked again), http(s) only
(Letta also reads `file://` paths from its own disk; Cairn refuses them), within
MAX_IMAGE_BYTES and FETCH_SECONDS, and only image types models take.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from cairn import outbound
from cairn.config import Settings
from cairn.domain.messages import ImageContent
from cairn.errors import InvalidArgumentError

MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the providers' own limit per image (Anthropic's)
FETCH_SECONDS = 10.0
TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def image_content(source: dict[str, Any], settings: Settings) -> ImageContent:
    """The image as it is stored: base64 with its media type; a 400 naming what is wrong."""
    kind = source.get("type")
    if kind == "base64":
        media, data = str(source.get("media_type") or ""), str(source.get("data") or "")
        _check(media, _decoded(data))
        kept = {"type": "base64", "media_type": media, "data": data}
        if source.get("detail"):
            kept["detail"] = str(source["detail"])
        return ImageContent(source=kept)
    if kind == "url":
        body, media = _fetch(str(source.get("url") or ""), settings)
        return ImageContent(source={"type": "base64", "media_type": media,
                                    "data": base64.standard_b64encode(body).decode()})  # fmt: skip
    raise InvalidArgumentError(
        f"content: an image's source must be base64 or url, not {kind!r} (a letta source "
        "names a file of Letta's own storage)"
    )


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError("content: the image's data is not base64") from None


def _check(media: str, body: bytes) -> None:
    if media not in TYPES:
        raise InvalidArgumentError(
            f"content: an image of type {media or 'unknown'} is not taken (png, jpeg, gif or webp)"
        )
    if not body:
        raise InvalidArgumentError("content: the image is empty")
    if len(body) > MAX_IMAGE_BYTES:
        raise InvalidArgumentError(
            f"content: the image is {len(body)} bytes, over the limit of {MAX_IMAGE_BYTES} "
            "bytes an image"
        )


def _fetch(url: str, settings: Settings) -> tuple[bytes, str]:
    opened = outbound.networks(settings.outbound_networks)
    try:
        got = outbound.fetch_bytes(url, opened, limit=MAX_IMAGE_BYTES, timeout=FETCH_SECONDS)
    except outbound.Refused as err:
        raise InvalidArgumentError(f"content: the image's url: {err}") from None
    except outbound.FetchFailed as err:
        raise InvalidArgumentError(
            f"content: the image's url could not be fetched: {err}"
        ) from None
    if got.truncated:
        raise InvalidArgumentError(
            f"content: the image is over the limit of {MAX_IMAGE_BYTES} bytes an image"
        )
    _check(got.media_type, got.body)
    return got.body, got.media_type
