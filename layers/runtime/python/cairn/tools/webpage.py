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
TEXT_TYPES = ("text/plain", "text/markdown", "application/json", "text/csv", "application/xml",
              "text/xml")  # fmt: skip


class FetchError(RuntimeError):
    """The page could not be fetched or read; the message says why (the model reads it)."""


def fetch(url: str, opened: tuple[outbound.Network, ...]) -> str:
    try:
        outbound.check(url, opened)
    except outbound.Refused as err:
        raise FetchError(f"Error fetching webpage: {err}") from None
    import httpx

    client = outbound.http_client(opened, TIMEOUT_SECONDS)
    try:
        with client, client.stream("GET", url, headers={"User-Agent": USER_AGENT}) as answer:
            if answer.status_code >= 400:
                raise FetchError(f"Error fetching webpage: {url} answered {answer.status_code}")
            body = bytearray()
            for chunk in answer.iter_bytes():
                body += chunk
                if len(body) > MAX_BYTES:
                    break
            kind = answer.headers.get("content-type", "text/html").split(";")[0].strip().lower()
            text = bytes(body[:MAX_BYTES]).decode(answer.encoding or "utf-8", errors="replace")
    except httpx.HTTPError as err:
        raise FetchError(f"Error fetching webpage: {type(err).__name__}: {err}") from None
    if kind in ("text/html", "application/xhtml+xml"):
        import html2text

        converter = html2text.HTML2Text()
        converter.body_width = 0  # no hard wrapping
        converter.ignore_images = True
        text = converter.handle(text)
    elif kind not in TEXT_TYPES and not kind.startswith("text/"):
        raise FetchError(f"Error fetching webpage: {url} is {kind}, not a page of text")
    return text.strip()[:MAX_CHARS]
