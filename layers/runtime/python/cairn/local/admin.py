"""`cairn-admin`: organizations, API keys and tools' network, for operators.

Locally (the default) it works on the local stack's database (DATABASE_URL, or the embedded
server under CAIRN_DATA_DIR, joined if `make dev` runs); with `--stack NAME` (or
`--function NAME`) it sends the same command to a deployed stack's migrate function with
your AWS credentials. Prints the answer as JSON; a plain API key appears only in the
answer of the command that made it.

    cairn-admin tenants                         # organizations, with their active keys
    cairn-admin create-tenant acme --user ada   # a new organization and its first key
    cairn-admin keys ORG_ID                     # an organization's keys (prefixes only)
    cairn-admin create-key ORG_ID --name ci
    cairn-admin rotate-key ORG_ID KEY_ID        # a new key; the old one stops at once
    cairn-admin revoke-key ORG_ID KEY_ID
    cairn-admin tool-hosts ORG_ID api.github.com '*.wikipedia.org'   # none: no network
    cairn-admin usage [--org ORG_ID] [--start 2026-11-01] [--end 2026-11-30]   # tokens, cost
    cairn-admin limits ORG_ID --monthly-tokens 5000000 --rpm 120   # 0: no limit; none: show
    cairn-admin --stack cairn import-letta postgresql://...   # a Letta database, on AWS

A Letta server run with LETTA_ENCRYPTION_KEY stored its providers' keys encrypted: set the
same variable when importing, and the command carries it to the import.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from cairn.config import Settings


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cairn-admin",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--stack", help="a deployed stack's name (its MigrateFunction output)")
    where.add_argument("--function", help="a deployed migrate function's name")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("tenants", help="list organizations")
    create = commands.add_parser("create-tenant", help="a new organization and its first key")
    create.add_argument("name")
    create.add_argument("--user", default="admin")
    commands.add_parser("keys", help="an organization's API keys").add_argument("org")
    key = commands.add_parser("create-key", help="another API key")
    key.add_argument("org")
    key.add_argument("--name", default="")
    for name, what in (("revoke-key", "revoke an API key"), ("rotate-key", "replace an API key")):
        one = commands.add_parser(name, help=what)
        one.add_argument("org")
        one.add_argument("key_id")
    hosts = commands.add_parser("tool-hosts", help="the hosts an organization's tools may reach")
    hosts.add_argument("org")
    hosts.add_argument("hosts", nargs="*")
    used = commands.add_parser("usage", help="usage per organization, day, agent and model")
    used.add_argument("--org", help="one organization (all by default)")
    used.add_argument("--start", help="the first day, YYYY-MM-DD (30 days ago by default)")
    used.add_argument("--end", help="the last day, YYYY-MM-DD (today by default)")
    limit = commands.add_parser("limits", help="an organization's budgets and rate limits")
    limit.add_argument("org")
    limit.add_argument("--monthly-tokens", type=int, help="input and output tokens a month")
    limit.add_argument("--monthly-cost", type=float, help="estimated US dollars a month")
    limit.add_argument("--rpm", type=int, help="requests per minute, per API key")
    limit.add_argument("--max-runs", type=int, help="agents its runs may hold at once")
    letta = commands.add_parser("import-letta", help="import a Letta 0.16.x database")
    letta.add_argument("source", help="the Letta database's URL (read only)")
    return parser.parse_args(argv)


def payload(args: argparse.Namespace) -> dict[str, Any]:
    org = getattr(args, "org", None)
    commands: dict[str, Callable[[], dict[str, Any]]] = {
        "tenants": lambda: {"action": "list_tenants"},
        "create-tenant": lambda: {
            "action": "create_tenant",
            "organization": args.name,
            "user": args.user,
        },
        "keys": lambda: {"action": "list_keys", "organization_id": org},
        "create-key": lambda: {"action": "create_key", "organization_id": org, "name": args.name},
        "revoke-key": lambda: {
            "action": "revoke_key",
            "organization_id": org,
            "key_id": args.key_id,
        },
        "rotate-key": lambda: {
            "action": "rotate_key",
            "organization_id": org,
            "key_id": args.key_id,
        },
        "import-letta": lambda: {"action": "import_letta", "source": args.source, **letta_key()},
        "usage": lambda: {
            "action": "usage",
            "organization_id": args.org,
            "start_date": args.start,
            "end_date": args.end,
        },
        "limits": lambda: {
            "action": "limits",
            "organization_id": org,
            **{
                name: value
                for name, value in (
                    ("monthly_tokens", args.monthly_tokens),
                    ("monthly_cost_usd", args.monthly_cost),
                    ("requests_per_minute", args.rpm),
                    ("max_runs", args.max_runs),
                )
                if value is not None
            },
        },
        "tool-hosts": lambda: {
            "action": "set_tool_hosts",
            "organization_id": org,
            "hosts": args.hosts,
        },
    }
    return commands[args.command]()


def letta_key() -> dict[str, str]:
    """The Letta server's LETTA_ENCRYPTION_KEY, if set here, to open the provider keys it
    stored encrypted (sent with the command, as the database URL is; never logged)."""
    key = os.environ.get("LETTA_ENCRYPTION_KEY")
    return {"letta_encryption_key": key} if key else {}


def run_local(command: dict[str, Any]) -> Any:
    from cairn.assembly.operator import operate
    from cairn.local.postgres import local_database

    with local_database(Settings.from_env()) as db:
        return operate(db, command)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    command = payload(args)
    try:
        if args.stack or args.function:
            from cairn.adapters.aws import admin

            target = args.function or admin.migrate_function(args.stack)
            answer = admin.run_remote(target, command)
            # An import leaves off before the function's deadline: invoke again until done
            # (each invocation goes on where the last stopped).
            while isinstance(answer, dict) and answer.get("finished") is False:
                print(f"cairn-admin: imported so far {answer['imported']}", file=sys.stderr)
                answer = admin.run_remote(target, command)
        else:
            answer = run_local(command)
    except Exception as err:  # an operator reads one line, not a traceback
        print(f"cairn-admin: {err}", file=sys.stderr)
        return 1
    print(json.dumps(answer, indent=2, default=str))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
