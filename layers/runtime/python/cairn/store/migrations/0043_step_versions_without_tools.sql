-- A step's version keeps no list of the agent's tools (issue 65: history rows carry what
-- changed): a step never attaches or detaches one, and the list was read and written on
-- every step. NULL is "as the version before"; a version that can change them (create,
-- update, rewind, fork) keeps the whole list, and readers take the newest one at or before
-- the version asked (store/history.py), by this index.
ALTER TABLE agent_versions ALTER COLUMN tool_ids DROP NOT NULL, ALTER COLUMN tool_ids DROP DEFAULT;
CREATE INDEX agent_versions_tools ON agent_versions (agent_id, version) WHERE tool_ids IS NOT NULL;
