"""The Telegram channel as assembly registers it: its routes, its webhook's keyless path,
its replies' queue kind, its typing indicator around a step, the reply a run's end starts
and the pruning of the updates it took."""

from __future__ import annotations

from cairn.run.edge import Edge
from cairn.telegram import replies
from cairn.telegram.settings import TelegramSettings

EDGE = Edge(
    name="telegram",
    routes={
        "cairn.telegram.routes": (
            "/telegram/bots",
            "/telegram/bots/<bot_id>",
            "/telegram/webhook/<bot_id>",
        )
    },
    keyless=(r"^/v1/telegram/webhook/[\w-]+$",),  # routes.WEBHOOK_PREFIX
    kinds=replies.KINDS,
    around_step=replies.AROUND_STEP,
    sweep=replies.SWEEP,
    run_end=replies.RUN_END,
    settings=TelegramSettings,
)
