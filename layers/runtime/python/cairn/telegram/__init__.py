"""The Telegram channel: bots linked to agents (`models.py`, `requests.py`, their rows in
`store.py`), their webhook and routes (`service.py`, `routes.py`), the Bot API (`bot_api.py`)
and a conversation's side of a run (`replies.py`: the typing indicator, the reply). An
edge: the core never names it; assembly registers it through `edge.py`."""
