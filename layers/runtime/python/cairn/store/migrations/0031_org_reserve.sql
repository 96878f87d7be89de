-- A reserve of the step pool for organizations with nothing running (docs/tenancy.md).
-- An organization that already holds agents takes another only while every organization
-- together holds fewer than `reserve_at` (the pool less its reserve, CAIRN_STEP_CONCURRENCY
-- less CAIRN_ORG_RESERVE; 0: no reserve), so hung models of a few organizations, each under
-- its share, cannot fill the pool: the last places go to an organization's first run.
-- The refused run waits in the outbox as one refused by its share does, and is woken when
-- one of its organization's runs ends (it holds one, or the rule would not have applied).
--
-- The count across organizations is read after this organization's turn only: claims of
-- two organizations at once may both see the last place below `reserve_at` and take it, so
-- the reserve bends by at most one place per organization claiming at that moment.
CREATE FUNCTION cairn_org_full(org text, run text, cap integer, turn_taken boolean,
                               reserve_at integer)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    mine bigint;
BEGIN
    IF NOT turn_taken THEN
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
    -- The partial index agents_held (migration 0017) holds only held agents: a scan of it
    -- reads as many rows as there are runs in progress, at most the pool.
    RETURN (SELECT count(*) FROM agents held
            WHERE held.lease_run_id IS NOT NULL AND held.lease_run_id <> run
              AND held.lease_expires_at >= now()) >= reserve_at;
END
$$;
