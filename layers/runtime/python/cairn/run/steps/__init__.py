"""The step and its kinds: `step.py` claims a step, picks its kind and commits its
checkpoint; `step_work.py` is what every kind shares, `step_model.py` its model call; the
kinds are `llm_step.py`, `approval_step.py` and `compaction_step.py` (`compaction.py`
decides what is summarised); what a step reads (`state.py`), the request it sends
(`prompt.py`), the loop policies (`policy.py`) and images described for a model without
vision (`image_descriptions.py`)."""
