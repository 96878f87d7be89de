-- The agents of an organization that a run holds now: counted when a step claims a new
-- agent, against CAIRN_ORG_MAX_RUNS (one organization's runs cannot take every worker).
CREATE INDEX agents_held ON agents (organization_id) WHERE lease_run_id IS NOT NULL;
