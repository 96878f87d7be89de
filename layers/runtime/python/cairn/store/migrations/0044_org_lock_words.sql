-- Words (ARCHITECTURE.md: a "turn" is an agent's run, nothing else): what migration 0020
-- called an organization's turn is the lock its claims take one at a time. The function
-- is renamed, and cairn_org_full is made again with its flag named for that lock (a
-- parameter's name cannot change in place); what each does is unchanged (0020, 0031).
ALTER FUNCTION cairn_org_turn(text) RENAME TO cairn_org_lock;

DROP FUNCTION cairn_org_full(text, text, integer, boolean, integer);
CREATE FUNCTION cairn_org_full(org text, run text, cap integer, lock_held boolean,
                               reserve_at integer)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    mine bigint;
BEGIN
    IF NOT lock_held THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('cairn.org_share:' || org, 0));
    END IF;
    SELECT count(*) INTO mine FROM agents held
    WHERE held.organization_id = org AND held.lease_run_id IS NOT NULL
      AND held.lease_run_id <> run AND held.lease_expires_at >= now();
    IF mine >= cap THEN
        RETURN true;
    END IF;
    IF reserve_at <= 0 OR mine = 0 THEN
        RETURN false;
    END IF;
    RETURN (SELECT count(*) FROM agents held
            WHERE held.lease_run_id IS NOT NULL AND held.lease_run_id <> run
              AND held.lease_expires_at >= now()) >= reserve_at;
END
$$;
