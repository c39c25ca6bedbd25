-- Workflows (docs/workflows.md): durable steps, sleeps, child tasks, signals, results and
-- cancellation. Additive: existing rows keep their meaning, and workers of the previous version
-- keep running the tasks they know (they never write the new states) while this is applied.
--
-- Two new statuses:
--   waiting:   parked by its handler (a sleep, children, a signal): no lease, no slot, no attempt
--              spent; wait_for says what it waits for. With a wake time (a sleep, a wait's
--              deadline) it is `scheduled` and available_at holds that time: the claim moves it
--              back to pending when due. Without one, only an event moves it (its last child's end,
--              a signal, a cancel), and available_at is when it parked.
--   cancelled: ended by cancelTask(); final, like done. A running task's late writes are refused
--              by the fence (status is no longer 'processing').
ALTER TABLE :SCHEMA.task DROP CONSTRAINT task_status_check;
ALTER TABLE :SCHEMA.task ADD CONSTRAINT task_status_check
  CHECK (status IN ('pending', 'processing', 'waiting', 'done', 'dead', 'cancelled')) NOT VALID;
ALTER TABLE :SCHEMA.task VALIDATE CONSTRAINT task_status_check;

-- Nullable or with a constant default: PostgreSQL only records the columns, it does not rewrite.
ALTER TABLE :SCHEMA.task
  -- the task that spawned this one as a child (ctx.spawn), whose wait its finish may end
  ADD COLUMN parent_id bigint,
  -- what the handler returned (JSON); null for nothing
  ADD COLUMN result jsonb,
  -- what a waiting task waits for: 'sleep', 'children' or 'signal:<name>'
  ADD COLUMN wait_for text,
  -- someone waits for this task's end (waitForResult): notify when it ends
  ADD COLUMN result_wanted boolean NOT NULL DEFAULT false;

-- parked tasks with a wake time, by that time: the claim moves the due ones back to pending
CREATE INDEX task_waiting ON :SCHEMA.task (available_at, id) WHERE status = 'waiting' AND scheduled;
-- children of a task: the ones not finished (does the parent wait on?), and all (cancel, listing)
CREATE INDEX task_open_children ON :SCHEMA.task (parent_id)
  WHERE parent_id IS NOT NULL AND status IN ('pending', 'processing', 'waiting');
CREATE INDEX task_children ON :SCHEMA.task (parent_id, id) WHERE parent_id IS NOT NULL;

-- One row per recorded step of a task, written with the fence (the task row locked at its
-- lease_version, in the same transaction), so a worker that lost its lease records nothing.
-- A sleep or a wait with a deadline is recorded open (done = false, wake_at set) when it starts
-- and closed when it ends, so its deadline survives re-runs.
CREATE TABLE :SCHEMA.task_step (
  task_id bigint NOT NULL,
  name text NOT NULL,
  done boolean NOT NULL,
  -- the step's JSON result; null when it returned nothing
  result jsonb,
  wake_at timestamptz,
  -- the claim that recorded it
  lease_version bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  done_at timestamptz,
  PRIMARY KEY (task_id, name)
);

-- Signals sent to a task (sendSignal, in the sender's transaction); a wait takes the oldest.
CREATE TABLE :SCHEMA.task_signal (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  task_id bigint NOT NULL,
  name text NOT NULL,
  payload jsonb,
  sent_at timestamptz NOT NULL DEFAULT now(),
  consumed_at timestamptz
);
CREATE INDEX task_signal_open ON :SCHEMA.task_signal (task_id, name, id) WHERE consumed_at IS NULL;

-- Steps and signals go with their task: deleted with it (a purge of done tasks) and truncated
-- with it. Triggers rather than foreign keys, so that `TRUNCATE <schema>.task` keeps working
-- alone (a foreign key would refuse it) and a task id reused after `RESTART IDENTITY` never
-- meets the steps of the task that had it before.
CREATE FUNCTION :SCHEMA.task_forget_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM :SCHEMA.task_step WHERE task_id IN (SELECT id FROM gone);
  DELETE FROM :SCHEMA.task_signal WHERE task_id IN (SELECT id FROM gone);
  RETURN NULL;
END
$$;

CREATE TRIGGER task_forget_deleted AFTER DELETE ON :SCHEMA.task
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION :SCHEMA.task_forget_deleted();

CREATE FUNCTION :SCHEMA.task_forget_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE :SCHEMA.task_step, :SCHEMA.task_signal;
  RETURN NULL;
END
$$;

CREATE TRIGGER task_forget_truncated AFTER TRUNCATE ON :SCHEMA.task
  FOR EACH STATEMENT EXECUTE FUNCTION :SCHEMA.task_forget_truncated();

-- A child that ends (done, dead or cancelled, by whoever: fenced finalize, reap, cancel, skip)
-- wakes its parent when it was the parent's last unfinished child, in the same transaction.
-- The parent's row is locked first: a sibling ending at the same time waits here, and the check
-- below, a later statement, then sees that sibling ended too (READ COMMITTED takes a new snapshot
-- per statement). A parent that is not waiting for children is left alone: its own wait checks
-- the children under the same lock before it parks.
CREATE FUNCTION :SCHEMA.task_child_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM :SCHEMA.task WHERE id = NEW.parent_id FOR NO KEY UPDATE;
  IF NOT EXISTS (SELECT 1 FROM :SCHEMA.task
                 WHERE parent_id = NEW.parent_id AND status IN ('pending', 'processing', 'waiting')) THEN
    UPDATE :SCHEMA.task
    SET status = 'pending', available_at = now(), scheduled = false, wait_for = NULL
    WHERE id = NEW.parent_id AND status = 'waiting' AND wait_for = 'children';
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER task_child_ended AFTER UPDATE OF status ON :SCHEMA.task
  FOR EACH ROW WHEN (NEW.parent_id IS NOT NULL AND NEW.status IN ('done', 'dead', 'cancelled')
                     AND OLD.status NOT IN ('done', 'dead', 'cancelled'))
  EXECUTE FUNCTION :SCHEMA.task_child_ended();

-- A parked task that becomes pending again wakes sleeping workers, like an insert (migration 5).
CREATE TRIGGER task_notify_woken AFTER UPDATE OF status ON :SCHEMA.task
  FOR EACH ROW WHEN (OLD.status = 'waiting' AND NEW.status = 'pending')
  EXECUTE FUNCTION :SCHEMA.notify_inserted();

-- waitForResult: a task someone waits for notifies '<schema>.task:ended' with its id when it ends.
CREATE FUNCTION :SCHEMA.task_notify_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('leasehold:' || TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME || ':ended', NEW.id::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER task_notify_ended AFTER UPDATE OF status ON :SCHEMA.task
  FOR EACH ROW WHEN (NEW.result_wanted AND NEW.status IN ('done', 'dead', 'cancelled') AND OLD.status <> NEW.status)
  EXECUTE FUNCTION :SCHEMA.task_notify_ended();

-- whoever may write the task table may write its steps and signals
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT DISTINCT grantee, privilege_type FROM information_schema.role_table_grants
           WHERE table_schema = replace(':SCHEMA', '"', '') AND table_name = 'task'
             AND privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE') AND grantee <> current_user
  LOOP
    EXECUTE format('GRANT %s ON :SCHEMA.task_step, :SCHEMA.task_signal TO %s', g.privilege_type,
                   CASE g.grantee WHEN 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g.grantee) END);
  END LOOP;
END
$$;
