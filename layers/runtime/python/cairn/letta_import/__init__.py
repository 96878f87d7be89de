"""Letta's import: a whole Letta 0.16.x database brought into Cairn (`importer.py`, with its
parts for memory and files), its progress (`report.py`) and the keys Letta sealed
(`keys.py`). An integration: it uses the core's services and store; the core never names it
(the operator's action is dispatched at assembly, `assembly/operator.py`)."""
