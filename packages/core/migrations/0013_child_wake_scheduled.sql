-- A parent whose last child ended goes back to pending as a scheduled row due now (the claim's
-- task_due), not into the claim's main index (task_claim): only INSERTs, with new ids, may add to
-- task_claim below the id a worker's claims start at (its ready floor, which keeps claims off the
-- index entries of rows claimed while a long transaction elsewhere holds vacuum back; see
-- ReadyFloor in the worker). The same as migration 9's function otherwise. Applies with tasks in
-- flight: CREATE OR REPLACE keeps the triggers, and workers of the previous version take rows
-- from task_due as well.
CREATE OR REPLACE FUNCTION :SCHEMA.task_child_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- locked first, as before: a parent parking in a transaction that has not committed yet is
  -- waited for, and the statements below then see it parked
  PERFORM 1 FROM :SCHEMA.task WHERE id = NEW.parent_id FOR NO KEY UPDATE;
  IF EXISTS (SELECT 1 FROM :SCHEMA.task WHERE id = NEW.parent_id AND status = 'waiting' AND wait_for = 'children') THEN
    IF NOT EXISTS (SELECT 1 FROM :SCHEMA.task
                   WHERE parent_id = NEW.parent_id AND status IN ('pending', 'processing', 'waiting')) THEN
      UPDATE :SCHEMA.task
      SET status = 'pending', available_at = now(), scheduled = true, wait_for = NULL
      WHERE id = NEW.parent_id AND status = 'waiting' AND wait_for = 'children';
    END IF;
  END IF;
  RETURN NULL;
END
$$;
