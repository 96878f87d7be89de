-- The hosts an organization's custom tools may reach through the egress proxy (empty: no
-- network at all). Set by the operator, not by the organization's own keys.
ALTER TABLE organizations ADD COLUMN tool_hosts text[] NOT NULL DEFAULT '{}';
