"""Driving a run: sync (`sending.py`), streamed (`streaming.py`) and queued (`worker.py`);
its continuations published (`dispatch.py`) and what a checkpoint starts besides
(`follow_ons.py`); a run's start and end from outside a step (`lifecycle.py`); every run
reaching an end (`watchdog.py`, `sweeper.py`); the workflows' tasks (`tasks.py`), fired
schedules (`schedules.py`) and round-robin groups (`group_chat.py`, `group_turns.py`)."""
