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
from cairn.domain.messages import ImageContent
from cairn.errors import InvalidArgumentError
from cairn.run.runtime import Runtime

MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the providers' own limit per image (Anthropic's)
# A message's images: each is sent again with every step while it is in the context window
# (twelve of 4 MiB made a 67 MB model request and a 67 MB page of messages), and a message is
# listed whole: 3.5 MiB is 4.9 MB as base64, so a page of one such message stays within
# Lambda's 6 MB response (pages are cut at 5 MB: api/http.py).
MAX_IMAGES_PER_MESSAGE = 10
MAX_MESSAGE_IMAGE_BYTES = 3_670_016
FETCH_SECONDS = 10.0
TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def check_count(count: int) -> None:
    if count > MAX_IMAGES_PER_MESSAGE:
        raise InvalidArgumentError(
            f"content: {count} images, over the limit of {MAX_IMAGES_PER_MESSAGE} a message"
        )


def size_of(image: ImageContent) -> int:
    """The image's bytes (its base64 data's decoded length)."""
    data = str(image.source.get("data") or "")
    return len(data) * 3 // 4 - data[-2:].count("=")


def check_total(total: int) -> None:
    if total > MAX_MESSAGE_IMAGE_BYTES:
        raise InvalidArgumentError(
            f"content: the message's images come to over {MAX_MESSAGE_IMAGE_BYTES} bytes, the "
            "limit a message (send them in several messages, or smaller)"
        )


def sniffed(body: bytes) -> str | None:
    """The image type the bytes themselves say (their signature), whatever was declared:
    an HTML page served as image/png is not an image."""
    if body.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if body.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if body[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if body[:4] == b"RIFF" and body[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_content(rt: Runtime, source: dict[str, Any]) -> ImageContent:
    """The image as it is stored: base64 with its media type; a 400 naming what is wrong."""
    kind = source.get("type")
    if kind == "base64":
        media, data = str(source.get("media_type") or ""), str(source.get("data") or "")
        media = _check(media, _decoded(data))
        kept = {"type": "base64", "media_type": media, "data": data}
        if source.get("detail"):
            kept["detail"] = str(source["detail"])
        return ImageContent(source=kept)
    if kind == "url":
        body, media = _fetch(rt, str(source.get("url") or ""))
        return ImageContent(
            source={
                "type": "base64",
                "media_type": media,
                "data": base64.standard_b64encode(body).decode(),
            }
        )
    raise InvalidArgumentError(
        f"content: an image's source must be base64 or url, not {kind!r} (a letta source "
        "names a file of Letta's own storage)"
    )


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError("content: the image's data is not base64") from None


def _check(media: str, body: bytes) -> str:
    """The image's type as its bytes say it (providers refuse an image whose declared type
    is not its own); a 400 for a type not taken, bytes that are no image, or too many."""
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
    actual = sniffed(body)
    if actual is None:
        raise InvalidArgumentError(
            f"content: the image's bytes are not a png, jpeg, gif or webp image (declared {media})"
        )
    return actual


def _fetch(rt: Runtime, url: str) -> tuple[bytes, str]:
    opened = outbound.networks(rt.settings.outbound_networks)
    try:  # a slow server holds no other request of the API meanwhile (locally)
        with rt.yielding():
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
    return got.body, _check(got.media_type, got.body)
