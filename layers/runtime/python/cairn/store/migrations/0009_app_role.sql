-- The role the functions connect as on AWS: rows, never schema. Migrations keep running as
-- the owner (the cluster's admin); this role reads and writes data only, so a compromised
-- function cannot drop or alter a table. Its password is the stack's AppUser secret, set by
-- the migrate function (`store/migrate.py: allow_login`); it connects through RDS Proxy with
-- IAM tokens. Roles belong to the whole server: made once, granted in every database.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'cairn_app') THEN
        CREATE ROLE cairn_app NOLOGIN;
    END IF;
END
$$;
GRANT USAGE ON SCHEMA public TO cairn_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO cairn_app;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO cairn_app;
-- Tables later migrations make (as the same owner) are granted as they are created.
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO cairn_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO cairn_app;
-- The migrations' own record stays the owner's.
REVOKE ALL ON schema_migrations FROM cairn_app;
