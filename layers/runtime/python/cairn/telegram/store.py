"""Telegram bots (token sealed in the row), each chat's agent, updates taken, replies sent."""

from __future__ import annotations

from typing import Any

from cairn.sealing import Sealer
from cairn.store.db import Connection
from cairn.telegram.models import TelegramBot

INSERT_BOT = """
INSERT INTO telegram_bots (id, organization_id, agent_id, mode, username, telegram_id,
                           token_sealed, secret_sha256, created_at)
VALUES (%(id)s, %(organization_id)s, %(agent_id)s, %(mode)s, %(username)s, %(telegram_id)s,
        %(token_sealed)s, %(secret_sha256)s, %(created_at)s)
RETURNING *
"""


def bound(org_id: str, bot_id: str) -> str:
    return f"telegram-bot:{org_id}:{bot_id}"


def add(conn: Connection, sealer: Sealer, bot: TelegramBot) -> TelegramBot:
    fields = bot.model_dump(exclude={"token"})
    sealed = sealer.seal(bot.token, bound(bot.organization_id, bot.id))
    row = conn.execute(INSERT_BOT, {**fields, "token_sealed": sealed}).fetchone()
    assert row is not None
    return _opened(sealer, row)


def get(conn: Connection, sealer: Sealer, org_id: str, bot_id: str) -> TelegramBot | None:
    row = conn.execute(
        "SELECT * FROM telegram_bots WHERE organization_id = %s AND id = %s", (org_id, bot_id)
    ).fetchone()
    return None if row is None else _opened(sealer, row)


def for_webhook(conn: Connection, sealer: Sealer, bot_id: str) -> TelegramBot | None:
    """A bot by its id alone: its webhook carries no API key (the secret token proves it)."""
    row = conn.execute("SELECT * FROM telegram_bots WHERE id = %s", (bot_id,)).fetchone()
    return None if row is None else _opened(sealer, row)


def list_bots(conn: Connection, sealer: Sealer, org_id: str) -> list[TelegramBot]:
    rows = conn.execute(
        "SELECT * FROM telegram_bots WHERE organization_id = %s ORDER BY created_at, id",
        (org_id,),
    ).fetchall()
    return [_opened(sealer, r) for r in rows]


def delete(conn: Connection, org_id: str, bot_id: str) -> bool:
    gone = conn.execute(
        "DELETE FROM telegram_bots WHERE organization_id = %s AND id = %s", (org_id, bot_id)
    )
    return gone.rowcount == 1


def chat_agent(conn: Connection, bot_id: str, chat_id: int) -> str | None:
    row = conn.execute(
        "SELECT agent_id FROM telegram_chats WHERE bot_id = %s AND chat_id = %s", (bot_id, chat_id)
    ).fetchone()
    return None if row is None else str(row["agent_id"])


def chat_agents(conn: Connection, bot_id: str) -> list[str]:
    rows = conn.execute("SELECT agent_id FROM telegram_chats WHERE bot_id = %s", (bot_id,))
    return [str(r["agent_id"]) for r in rows]


def set_chat_agent(conn: Connection, bot_id: str, chat_id: int, agent_id: str) -> str:
    """The chat's agent: this one, or the one another delivery recorded first."""
    row = conn.execute(
        """INSERT INTO telegram_chats (bot_id, chat_id, agent_id) VALUES (%s, %s, %s)
           ON CONFLICT (bot_id, chat_id) DO UPDATE SET chat_id = EXCLUDED.chat_id
           RETURNING agent_id""",
        (bot_id, chat_id, agent_id),
    ).fetchone()
    assert row is not None
    return str(row["agent_id"])


def taken(conn: Connection, bot_id: str, update_id: int) -> bool:
    """Whether the update was taken before (a look, not the taking: see take_update)."""
    row = conn.execute(
        "SELECT 1 FROM telegram_updates WHERE bot_id = %s AND update_id = %s", (bot_id, update_id)
    ).fetchone()
    return row is not None


def take_update(conn: Connection, bot_id: str, update_id: int) -> bool:
    """Record an update as taken; False if it was taken before (Telegram delivered it again)."""
    taken = conn.execute(
        """INSERT INTO telegram_updates (bot_id, update_id) VALUES (%s, %s)
           ON CONFLICT DO NOTHING""",
        (bot_id, update_id),
    )
    return taken.rowcount == 1


def prune_updates(conn: Connection, *, older_than_seconds: float) -> int:
    gone = conn.execute(
        "DELETE FROM telegram_updates WHERE received_at < now() - make_interval(secs => %s)",
        (older_than_seconds,),
    )
    return gone.rowcount


def parts_sent(conn: Connection, run_id: str) -> int:
    row = conn.execute(
        "SELECT parts_sent FROM telegram_replies WHERE run_id = %s", (run_id,)
    ).fetchone()
    return 0 if row is None else int(row["parts_sent"])


def set_parts_sent(conn: Connection, run_id: str, sent: int) -> None:
    conn.execute(
        """INSERT INTO telegram_replies (run_id, parts_sent) VALUES (%s, %s)
           ON CONFLICT (run_id) DO UPDATE SET parts_sent = EXCLUDED.parts_sent""",
        (run_id, sent),
    )


def _opened(sealer: Sealer, row: dict[str, Any]) -> TelegramBot:
    row = dict(row)
    token = sealer.open(bytes(row.pop("token_sealed")), bound(row["organization_id"], row["id"]))
    return TelegramBot.model_validate({**row, "token": token})
