"""Every accepted run ends, with every effect once, when the whole local stack is SIGKILLed
at seeded random moments while agents send concurrently (crash_load.py has the scenario;
bench/crash_load.py runs it large)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.e2e.crash_load import problems, run_scenario

SEED = int(os.environ.get("CAIRN_CRASH_SEED", "30"))


def test_concurrent_sends_through_random_kills_all_end_with_each_effect_once(
    tmp_path: Path,
) -> None:
    outcome = run_scenario(tmp_path, seed=SEED, agents=3, sends=3, kills=2, coalescers=1)
    assert len(outcome.kills) == 2
    assert outcome.accepted, "no send was accepted"
    assert problems(outcome) == [], (outcome.kills, outcome.seconds_to_end)
    # The coalescing agent's bursts joined turns: some run answered more than one send.
    assert any(len(facts) > 1 for facts in outcome.accepted.values()), outcome.accepted
    # Within two minutes of the last restart (a failing run would have stopped the loop
    # at its bound, and `problems` named it).
    assert outcome.seconds_to_end <= 120
