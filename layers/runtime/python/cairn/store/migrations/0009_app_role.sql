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
-- In the schema the migrations run in (public on a stack; tests run them in others).
DO $$
DECLARE
    here text := current_schema();
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO cairn_app', here);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO cairn_app',
                   here);
    EXECUTE format('GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA %I TO cairn_app', here);
    -- Tables later migrations make (as the same owner) are granted as they are created.
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I'
                   ' GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO cairn_app', here);
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I'
                   ' GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO cairn_app', here);
    -- The migrations' own record stays the owner's.
    EXECUTE format('REVOKE ALL ON %I.schema_migrations FROM cairn_app', here);
END
$$;
