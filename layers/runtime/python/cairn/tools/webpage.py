"""fetch_webpage's fetching: a page at a URL the model gave, as text.

The URL is anyone's, so the fetch goes through the outbound-address policy (`cairn.outbound`:
public addresses only unless the operator opened a network), every redirect's connection
checked again; at most MAX_BYTES are read, within TIMEOUT_SECONDS; HTML becomes Markdown-ish
text with html2text, and the text is cut at MAX_CHARS.
"""

from __future__ import annotations

from cairn import outbound

TIMEOUT_SECONDS = 10.0
MAX_BYTES = 5 * 1024 * 1024
MAX_CHARS = 40_000
USER_AGENT = "Mozilla/5.0 (compatible; CairnBot/1.0)"
TEXT_TYPES = (
    "text/plain",
    "text/markdown",
    "application/json",
    "text/csv",
    "application/xml",
    "text/xml",
)


class FetchError(RuntimeError):
    """The page could not be fetched or read; the message says why (the model reads it)."""


def fetch(url: str, opened: tuple[outbound.Network, ...]) -> str:
    try:
        got = outbound.fetch_bytes(
            url,
            opened,
            limit=MAX_BYTES,
            timeout=TIMEOUT_SECONDS,
            headers={"User-Agent": USER_AGENT},
        )
    except (outbound.Refused, outbound.FetchFailed) as err:
        raise FetchError(f"Error fetching webpage: {err}") from None
    kind = got.media_type or "text/html"
    text = got.body.decode(got.encoding or "utf-8", errors="replace")
    if kind in ("text/html", "application/xhtml+xml"):
        import html2text

        converter = html2text.HTML2Text()
        converter.body_width = 0  # no hard wrapping
        converter.ignore_images = True
        text = converter.handle(text)
    elif kind not in TEXT_TYPES and not kind.startswith("text/"):
        raise FetchError(f"Error fetching webpage: {url} is {kind}, not a page of text")
    return text.strip()[:MAX_CHARS]
