"""The run: driving one agent turn (sync, streamed, queued), its step kinds and a step's work.

Words (docs/architecture.md): a *run* is one agent turn; a *step* is one model call, its
tools and one checkpoint; a *step kind* is what a step does (a model step, an approval, a
compaction). Driving: `sending.py` (sync), `streaming.py` (streamed), `worker.py`
(queued), `dispatch.py` (continuations), `watchdog.py` and `sweeper.py` (every run ends).
The step: `step.py` (claim, kind, commit), `step_work.py` (what every kind shares),
`llm_step.py`, `approval_step.py`, `compaction_step.py`. What a process shares:
`runtime.py` and the ports it holds."""
