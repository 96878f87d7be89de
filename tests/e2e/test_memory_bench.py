"""bench/memory.py runs a conversation in LoCoMo's format through a local stack and scores
what recall and archival search found: here a small conversation written for the test
(the public dataset is never copied into the repository), with the model-free embedder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONVERSATION = {
    "speaker_a": "Ada",
    "speaker_b": "Grace",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ada", "dia_id": "D1:1", "text": "Hi Grace! How was your week?"},
        {"speaker": "Grace", "dia_id": "D1:2", "text": "Busy, I adopted a greyhound named Pixel."},
        {"speaker": "Ada", "dia_id": "D1:3", "text": "Lovely. I started learning the cello."},
    ],
    "session_2_date_time": "9:00 am on 20 June, 2023",
    "session_2": [
        {
            "speaker": "Grace",
            "dia_id": "D2:1",
            "text": "We hiked to the lighthouse on Sunday.",
            "blip_caption": "a photo of a white lighthouse on a cliff",
        },
        {"speaker": "Ada", "dia_id": "D2:2", "text": "My cello teacher moved to Lisbon."},
    ],
    "qa": [
        {"question": "What is the name of Grace's dog?", "evidence": ["D1:2"], "category": 4},
        {"question": "Which instrument does Ada learn?", "evidence": ["D1:3"], "category": 4},
        {"question": "Where did Grace hike to?", "evidence": ["D2:1"], "category": 2},
        {"question": "Is this left out?", "evidence": ["D2:2"], "category": 5},
    ],
}


def test_the_memory_benchmark_scores_a_conversation_through_the_api(tmp_path: Path) -> None:
    dataset = tmp_path / "tiny.json"
    dataset.write_text(json.dumps(CONVERSATION))
    done = subprocess.run(
        [
            *(sys.executable, "bench/memory.py", str(dataset), "--embedding", "hash"),
            *("--ablate", "--scale", "20"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "tiny: 5 turns" in out
    tables = out.split("\nrecall hybrid\n")[1]
    recall_hybrid = tables.split("\n\n")[0]
    # three answerable questions (category 5 is left out), each found first
    assert "| all | 3 | 1.000 | 1.000 | 1.000 | 1.000 |" in recall_hybrid, out
    archival = out.split("\narchival\n")[1].split("\n\n")[0]
    assert "| all | 3 | 1.000 |" in archival, out
    assert "| recall hybrid |" in out and "| archival insert |" in out
    # the ranking with each part off, on the stored conversation
    assert "| recall, default | 1.000 | 1.000 |" in out, out
    assert "| archival, meaning only (vectors) |" in out
    # and search timed at 20 messages
    assert "recall search (hybrid) at 20 messages: p50" in out
