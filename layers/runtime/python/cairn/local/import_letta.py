"""`cairn import-letta postgresql://user:pw@host/letta`: a whole Letta 0.16.x database into
Cairn (letta_import/importer.py says what comes over). Locally it writes to the local
stack's database (DATABASE_URL, or the embedded server under CAIRN_DATA_DIR; stop
`make dev` first); on AWS, run it with DATABASE_URL set to the stack's database. Shows a
line per phase with its counts, and ends with the report as JSON. Safe to run again: what
is there is left alone, and an interrupted import goes on where it stopped.

Organizations' own providers come with their keys. If the Letta server ran with
LETTA_ENCRYPTION_KEY, set it here too (the environment, not the command line, so it is in
no shell history or process list): its keys are stored encrypted with it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from cairn.config import Settings


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cairn", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    letta = commands.add_parser("import-letta", help="import a Letta 0.16.x database")
    letta.add_argument("source", help="the Letta database's URL (read only)")
    return parser.parse_args(argv)


def progress(phase: str, done: int, total: int) -> None:
    """One line per phase, rewritten in place: `agents   [#####     ] 2/4`."""
    width = 24
    filled = width * done // total if total else width
    end = "\n" if done >= total else ""
    bar = "#" * filled + " " * (width - filled)
    print(f"\r{phase:<16} [{bar}] {done}/{total}", end=end, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from cairn.assembly.operator import import_letta
    from cairn.local.postgres import local_database

    try:
        with local_database(Settings.from_env()) as db:
            report = import_letta(
                db, args.source, progress, letta_key=os.environ.get("LETTA_ENCRYPTION_KEY")
            )
    except Exception as err:  # an operator reads one line, not a traceback
        print(f"cairn import-letta: {err}", file=sys.stderr)
        return 1
    print(json.dumps(report.as_dict(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
