"""The egress proxy's rules: host patterns, what they match, and the signed pass."""

from __future__ import annotations

import time

import pytest

from cairn.tools import egress

KEY = b"k" * 32


def test_host_patterns_are_checked_and_normalised() -> None:
    kept = egress.check_hosts([" API.example.com ", "*.wiki.org", "*", "10.1.2.3:8443", "*"])
    assert kept == ["api.example.com", "*.wiki.org", "*", "10.1.2.3:8443"]
    for bad in ("http://x.com", "x.com/path", "*x.com", "a..b", "x.com:0", "x.com:70000", ""):
        with pytest.raises(ValueError, match="not a host pattern"):
            egress.check_hosts([bad])
    with pytest.raises(ValueError, match="at most"):
        egress.check_hosts([f"h{i}.example.com" for i in range(egress.MAX_HOSTS + 1)])


@pytest.mark.parametrize(
    ("host", "port", "patterns", "expected"),
    [
        ("api.example.com", 443, ["api.example.com"], True),
        ("api.example.com", 80, ["api.example.com"], True),
        ("api.example.com", 8443, ["api.example.com"], False),
        ("api.example.com", 8443, ["api.example.com:8443"], True),
        ("API.Example.com.", 443, ["api.example.com"], True),
        ("evil-api.example.com", 443, ["api.example.com"], False),
        ("a.b.wiki.org", 443, ["*.wiki.org"], True),
        ("wiki.org", 443, ["*.wiki.org"], False),
        ("notwiki.org", 443, ["*.wiki.org"], False),
        ("anything.net", 443, ["*"], True),
        ("anything.net", 22, ["*"], False),
        ("anything.net", 443, [], False),
    ],
)
def test_allowed(host: str, port: int, patterns: list[str], expected: bool) -> None:
    assert egress.allowed(host, port, patterns) is expected


def test_a_pass_holds_its_organization_hosts_and_expiry() -> None:
    token = egress.issue(KEY, "org-1", ["api.example.com"], 60)
    granted = egress.verify(KEY, token)
    assert granted is not None and granted.organization_id == "org-1"
    assert granted.hosts == ("api.example.com",) and granted.expires > time.time() + 50
    assert egress.verify(b"another key", token) is None
    assert egress.verify(KEY, token, now=time.time() + 120) is None  # expired
    body, _, signature = token.partition(".")
    widened = egress.issue(b"forger", "org-1", ["*"], 60).partition(".")[0]
    assert egress.verify(KEY, f"{widened}.{signature}") is None  # a body it did not sign
    for junk in ("", ".", "not-a-pass", f"{body}.", "a.b.c", "%%%.%%%"):
        assert egress.verify(KEY, junk) is None


ADDRESSES = [
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "::1",
    "fe80::1",
    "fd00::1",
    "::ffff:127.0.0.1",
    "93.184.216.34",
    "8.8.8.8",
    "2606:4700::1111",
]


def test_the_servers_outbound_policy_and_the_tools_proxy_agree_on_every_address() -> None:
    from cairn import outbound

    proxy = egress.serve(("127.0.0.1", 0), b"k" * 32)
    opened = egress.serve(("127.0.0.1", 0), b"k" * 32, private_networks=["10.0.0.0/8"])
    try:
        for address in ADDRESSES:
            assert outbound.reachable(address) == proxy.reachable(address), address
            wide = outbound.reachable(address, outbound.networks("10.0.0.0/8"))
            assert wide == opened.reachable(address), address
    finally:
        proxy.server_close()
        opened.server_close()
    assert [a for a in ADDRESSES if outbound.reachable(a)] == [
        "93.184.216.34",
        "8.8.8.8",
        "2606:4700::1111",
    ]
