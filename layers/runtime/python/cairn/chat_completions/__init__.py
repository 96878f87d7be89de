"""The OpenAI-compatible door (`POST /v1/chat/completions`): a chat request (`requests.py`)
turned into an ordinary send to the agent it names (`service.py`), answered whole or as
OpenAI's chunks (`chunks.py`) by its route (`routes.py`). A channel: assembly registers it
through `edge.py`; the core never names it."""
