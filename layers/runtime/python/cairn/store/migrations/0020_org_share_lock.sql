-- Whether an organization holds as many agents as it may (CAIRN_ORG_MAX_RUNS), asked by a
-- claim taking a new agent. Counting in the claim itself let several claims at once each
-- see a free place and all take it (four of three; the bystander tenant then waited for a
-- worker: tests/integration/test_step_worker.py). Now claims of one organization take
-- their turn (`cairn_org_turn`, a lock held until the claim commits), and the count, a
-- query of a VOLATILE function, reads a snapshot taken after the lock, so it sees the
-- leases of the claims before it ("Function Volatility Categories", PostgreSQL docs).
--
-- The turn is always taken before the agent row is locked (a claim's conditions are
-- checked before its row is; a sync send's start takes it before its FOR UPDATE), so two
-- claims never hold one each while waiting for the other's.
CREATE FUNCTION cairn_org_turn(org text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('cairn.org_share:' || org, 0));
    RETURN true;
END
$$;

-- `turn_taken`: this transaction took the turn already (a sync send's start).
CREATE FUNCTION cairn_org_full(org text, run text, cap integer, turn_taken boolean)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT turn_taken THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('cairn.org_share:' || org, 0));
    END IF;
    RETURN (SELECT count(*) FROM agents held
            WHERE held.organization_id = org AND held.lease_run_id IS NOT NULL
              AND held.lease_run_id <> run AND held.lease_expires_at >= now()) >= cap;
END
$$;
