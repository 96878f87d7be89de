"""The local adapters: queues and workflows in this process or on moto, the Lambda handlers
run in this process, and file originals in a directory."""
