"""The runtime a process shares across invocations: its record (`parts.py`) and how it is
built from the settings (`build.py`): the database pool, the engine, the queues and the
workflows, in process or on AWS."""
