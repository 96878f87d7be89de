"""The crash-and-load scenario of `tests/e2e/crash_load.py`, large: many agents sending
while the whole local stack is SIGKILLed at seeded random moments, crawling model calls
beside them, the cores busy. Prints what happened; the figures go to docs/reliability.md.

    .venv/bin/python bench/crash_load.py [--agents 20] [--sends 5] [--kills 5] [--seed 30]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.crash_load import problems, run_scenario  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--sends", type=int, default=5)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--crawlers", type=int, default=4)
    parser.add_argument("--burn", type=int, default=2, help="processes keeping cores busy")
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_scenario(
            Path(tmp),
            seed=args.seed,
            agents=args.agents,
            sends=args.sends,
            kills=args.kills,
            crawlers=args.crawlers,
            burn_cores=args.burn,
            end_within=600,
        )
    statuses = Counter(r["status"] for r in outcome.runs.values())
    found = problems(outcome)
    print(
        json.dumps(
            {
                "agents": args.agents,
                "sends_each": args.sends,
                "kills": args.kills,
                "seed": args.seed,
                "kill_moments_s": outcome.kills,
                "runs": len(outcome.runs),
                "accepted": len(outcome.accepted),
                "not_answered": outcome.refused,
                "statuses": dict(statuses),
                "seconds_to_all_ended_after_last_restart": outcome.seconds_to_end,
                "load_1_5_15": [round(x, 1) for x in outcome.load],
                "problems": found[:20],
            },
            indent=1,
        )
    )
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
