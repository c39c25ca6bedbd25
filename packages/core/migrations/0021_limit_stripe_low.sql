-- A stripe's count of its processing rows starts at a lower bound of their ids (low), instead of
-- at the stripe's first index entry. The running tasks' index keeps an entry for every task that
-- ran under the limit until vacuum removes it; while a long transaction elsewhere holds the MVCC
-- horizon, vacuum removes none, and every claim counted through all of them: a drain of 50,000
-- tasks under a limit of 1,000 read 4,700–12,600 entries per scan (issue 36, bench/RESULTS.md).
--
-- task_flow_held_id replaces task_flow_held (flow, flow_slot) with the same rows and the id after
-- them, so the count reads one range from low. Built with a plain CREATE INDEX inside the
-- migration's transaction (docs/operations.md, "Upgrading to migration 21"): on a big table
-- build it beforehand with CONCURRENTLY under this name, and this finds it.
CREATE INDEX IF NOT EXISTS task_flow_held_id ON :SCHEMA.task (flow, flow_slot, id) WHERE status = 'processing' AND flow IS NOT NULL;
DROP INDEX IF EXISTS :SCHEMA.task_flow_held;

-- low: no processing row of the stripe has a smaller id, as long as low_at = claims (the claims
-- count low was written at). A claim that takes rows lowers it to the least of them; a claim
-- whose count saw every row of the stripe (the version it locked is the one it read) sets it to
-- the least id it counted. A claim of a worker of the previous version writes claims without
-- low_at: the stripe is then counted from its start, and the next such full count sets low again.
ALTER TABLE :SCHEMA.task_limit_stripe ADD COLUMN low bigint NOT NULL DEFAULT 0;
ALTER TABLE :SCHEMA.task_limit_stripe ADD COLUMN low_at bigint NOT NULL DEFAULT 0;
UPDATE :SCHEMA.task_limit_stripe SET low_at = claims;
