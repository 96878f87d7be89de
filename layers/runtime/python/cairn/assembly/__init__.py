"""Assembly: the Runtime a process shares across invocations, built from the settings
(`build.py`): the database pool, the engine, the queues and the workflows, in process or on
AWS, and the edges registered with the core."""
