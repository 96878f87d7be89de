"""Letta's agent files (`.af`): an agent and what it uses exported (`exporting.py`) and
imported (`importing.py`), with their folders and files (`folders.py`), through its routes
(`routes.py`). An integration: assembly registers it through `edge.py`; the core never
names it."""
