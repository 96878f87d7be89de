"""Letta's agent files (`.af`): an agent and what it uses exported (`exporting.py`) and
imported (`importing.py`), with their folders and files (`folders.py`). An integration: the
routes in `api/routes/agent_files.py` use it; the core never names it."""
