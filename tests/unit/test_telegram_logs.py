"""A bot's token in an httpx log line is masked, and the line is still logged whole."""

from __future__ import annotations

import logging

import httpx
import pytest

import cairn.telegram.bot_api  # noqa: F401 - installs the mask on httpx's logger


def test_a_token_is_masked_and_every_other_httpx_line_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = httpx.URL("https://api.telegram.org/bot123456:AAE-secret_token/sendMessage")
    log = logging.getLogger("httpx")
    with caplog.at_level(logging.INFO, logger="httpx"):
        # httpx's own format: the status is a number (%d); masking every argument as a
        # string made each such line a logging error, and lost it
        log.info('HTTP Request: %s %s "%s %d %s"', "POST", url, "HTTP/1.1", 200, "OK")
        log.info('HTTP Request: %s %s "%s %d %s"', "POST", "https://x.test/v1", "HTTP/1.1", 201, "")
        log.info("a file at /file/bot99:tok/photos/1.jpg")
    assert caplog.messages == [
        'HTTP Request: POST https://api.telegram.org/bot***/sendMessage "HTTP/1.1 200 OK"',
        'HTTP Request: POST https://x.test/v1 "HTTP/1.1 201 "',
        "a file at /file/bot***/photos/1.jpg",
    ]
    assert "secret" not in caplog.text
