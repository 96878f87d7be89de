"""The tools' side of a step: the ToolContext a step hands the built-in tools
(`context.py`), a response's calls checked and run (`calls.py`), and the backends they
reach: recall and archival search (`search.py`), files (`file_tools.py`,
`file_opening.py`), custom tools in the sandbox (`custom_tools.py`), other agents
(`agent_messages.py`, `agent_tools.py`) and voice memory (`voice_memory.py`)."""
