"""The Telegram channel: bots linked to agents, their webhook (`service.py`), the Bot API
(`bot_api.py`) and a conversation's side of a run (`replies.py`: the typing indicator, the
reply). An edge: the core never names it; assembly registers its queue kinds and its hook
around a step."""
