-- A child that ends checks its siblings only while its parent waits for its children (migration 8
-- checked on every child). The check visits the rows of the parent's children, finished ones
-- included, and a batch that ends many children of one parent ran it once per child: ending a
-- fan-out's last 1,000 of 5,000 children in one fenced write visited some 190,000 row versions
-- (1.2 s, growing with both numbers). The first child of that batch wakes the parent, which is
-- pending from then on, and the others skip the check. Applies with tasks in flight: the
-- triggers keep calling the same function (CREATE OR REPLACE keeps it), and its new body applies
-- to the statements that start after this commits.
CREATE OR REPLACE FUNCTION :SCHEMA.task_child_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- locked first, as before: a parent parking in a transaction that has not committed yet is
  -- waited for, and the statements below then see it parked
  PERFORM 1 FROM :SCHEMA.task WHERE id = NEW.parent_id FOR NO KEY UPDATE;
  IF EXISTS (SELECT 1 FROM :SCHEMA.task WHERE id = NEW.parent_id AND status = 'waiting' AND wait_for = 'children') THEN
    IF NOT EXISTS (SELECT 1 FROM :SCHEMA.task
                   WHERE parent_id = NEW.parent_id AND status IN ('pending', 'processing', 'waiting')) THEN
      UPDATE :SCHEMA.task
      SET status = 'pending', available_at = now(), scheduled = false, wait_for = NULL
      WHERE id = NEW.parent_id AND status = 'waiting' AND wait_for = 'children';
    END IF;
  END IF;
  RETURN NULL;
END
$$;
