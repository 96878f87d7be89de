"""The run: driving one agent turn (sync, streamed, queued), its step kinds and a step's work.

Words (docs/architecture.md): a *run* is one agent turn; a *step* is one model call, its
tools and one checkpoint; a *step kind* is what a step does (a model step, an approval, a
compaction). One idea a package: `driving/` (sending, streaming, the worker, continuations,
every run ending), `steps/` (the step, its kinds and what they share), `backends/` (the
tools' side of a step). Here: what every package of the run sees, the process's shared
record and its ports (`runtime.py`, `ports.py`), the operator's metrics and embedding spend
(`metering.py`, `embedding_spend.py`), organizations' provider keys (`provider_vault.py`),
work after a reply (`later.py`), dates as tools name them (`dates.py`), and agents made
ready to run (`agents.py`, `sleeptime.py`)."""
