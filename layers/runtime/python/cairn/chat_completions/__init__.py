"""The OpenAI-compatible door (`POST /v1/chat/completions`): a chat request turned into an
ordinary send to the agent it names (`service.py`). A channel: its route is
`api/routes/chat.py`, its stream `api/openai_stream.py`; the core never names it."""
