-- Every row an organization owns goes when the organization goes. `sandbox_configs` and
-- `mcp_servers` (migrations 0023, 0024) named their organization without referring to it:
-- an organization deleted left its sandbox variables and its MCP servers' sealed tokens
-- behind (found when a test of one organization met another's MCP server). Rows whose
-- organization is gone already are deleted; each table then cascades from its owner.
DELETE FROM sandbox_configs c
 WHERE NOT EXISTS (SELECT 1 FROM organizations o WHERE o.id = c.organization_id);
DELETE FROM mcp_servers m
 WHERE NOT EXISTS (SELECT 1 FROM organizations o WHERE o.id = m.organization_id);
ALTER TABLE sandbox_configs ADD CONSTRAINT sandbox_configs_organization_id_fkey
    FOREIGN KEY (organization_id) REFERENCES organizations (id) ON DELETE CASCADE;
ALTER TABLE mcp_servers ADD CONSTRAINT mcp_servers_organization_id_fkey
    FOREIGN KEY (organization_id) REFERENCES organizations (id) ON DELETE CASCADE;
