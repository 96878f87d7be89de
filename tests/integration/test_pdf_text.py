"""Reading a hostile PDF is bounded (jobs/pdf_text.py): in a child process, cut at a
page's time, a file's time and its text's cap while reading, a Flate bomb and pypdf's own
limits an error of the file, never a crashed worker or a 500. The PDFs are written here
byte by byte: what a hostile tenant would upload."""

from __future__ import annotations

import zlib

import pytest

from cairn.jobs.documents import DocumentError, pdf_pages
from cairn.jobs.pdf_text import Limits, pdf_text

WORDS = 300_000  # "(word) Tj" this many times: ~1.2 MB of text from a 3 MB stream


def raw_pdf(objects: list[bytes]) -> bytes:
    """Objects 1..n (1 the catalog) with their cross-reference table."""
    out, offsets = b"%PDF-1.4\n", []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    table = b"".join(b"%010d 00000 n \n" % at for at in offsets)
    return out + (
        b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
        + table
        + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n"
        % (len(objects) + 1, len(out))
    )


def flate(data: bytes) -> bytes:
    packed = zlib.compress(data, 9)
    return (
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream"
    )


def pages(count: int, content: bytes) -> bytes:
    """`count` pages all drawn from one content stream (object 4)."""
    kids = b" ".join(b"%d 0 R" % (5 + n) for n in range(count))
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 3 0 R >> >> >>"
    )
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            flate(content),
            *[page] * count,
        ]
    )


def words(n: int) -> bytes:
    return b"BT /F1 12 Tf 72 720 Td " + b"(word) Tj " * n + b"ET"


def test_pages_sharing_one_large_stream_read_it_once() -> None:
    """Twelve pages of one 300 KB stream (an 11 KB file): read once, not twelve times."""
    body = pages(12, words(WORDS // 10))
    assert len(body) < 20_000
    text = pdf_text(body, Limits(max_chars=10**9, page_seconds=30, file_seconds=60))
    assert text.count("word") == 12 * (WORDS // 10)


def test_the_text_cap_is_checked_while_reading_not_after() -> None:
    body = pages(12, words(WORDS // 10))
    with pytest.raises(DocumentError, match="passes 150000 characters by page 2,"):
        pdf_text(body, Limits(max_chars=150_000, page_seconds=30))


def test_a_page_that_takes_too_long_is_cut_and_named() -> None:
    with pytest.raises(DocumentError, match=r"page 1 of the PDF took over 0\.5 s"):
        pdf_text(pages(1, words(WORDS)), Limits(max_chars=10**9, page_seconds=0.5))


def test_a_flate_bomb_is_an_error_of_the_file() -> None:
    bomb = pages(1, words(1) + b" " * 400_000_000)  # 400 MB of spaces in ~400 KB
    assert len(bomb) < 1_000_000
    with pytest.raises(DocumentError, match="not a readable PDF: LimitReachedError"):
        pdf_text(bomb, Limits(max_chars=10**9))


def test_a_page_tree_past_pypdfs_limits_is_refused_at_upload() -> None:
    """500,000 references to one page (3 MB): pypdf's LimitReachedError, once a 500."""
    kids = b" ".join([b"3 0 R"] * 500_000)
    tree = raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count 500000 >>" % kids,
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
        ]
    )
    with pytest.raises(DocumentError, match="not a readable PDF: LimitReachedError"):
        pdf_pages(tree)
