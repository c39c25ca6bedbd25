-- Progress events (docs/workflows.md, "Progress events"): a running workflow publishes where it
-- stands (`ctx.setEvent(key, value)`) and anyone reads it (`getEvent(pool, task, key)`), waiting
-- for it if it is not set yet. One row per task and key, the latest value: a later write of the
-- key replaces it. Written by the run with the fence, in the statement that records the call in
-- task_step, so a worker that lost its lease writes nothing and a replayed call does not write
-- again. Additive: workers of the previous version never read or write it.
CREATE TABLE :SCHEMA.task_event (
  task_id bigint NOT NULL,
  key text NOT NULL,
  -- JSON, never SQL NULL: a key without a row is "not set"
  value jsonb NOT NULL,
  -- the claim that wrote it
  lease_version bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, key)
);

-- getEvent waits on LISTEN '<schema>.task:event': every write of a task's event notifies it with
-- the task's id (a few bytes; PostgreSQL folds the same notification sent twice in one
-- transaction into one), and each wait of that task reads its key again.
CREATE FUNCTION :SCHEMA.task_event_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('leasehold:' || TG_TABLE_SCHEMA || '.task:event', NEW.task_id::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER task_event_notify AFTER INSERT OR UPDATE ON :SCHEMA.task_event
  FOR EACH ROW EXECUTE FUNCTION :SCHEMA.task_event_notify();

-- Events go with their task, as its steps and signals do (migration 8): the same statement
-- triggers, not a foreign key, so `TRUNCATE <schema>.task` keeps working alone and a purge batch
-- deletes them by the deleted ids (the primary key's first column). Applies with workers
-- running: the triggers keep calling the same functions (CREATE OR REPLACE keeps them).
CREATE OR REPLACE FUNCTION :SCHEMA.task_forget_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM :SCHEMA.task_step WHERE task_id = ANY(ARRAY(SELECT id FROM gone));
  DELETE FROM :SCHEMA.task_signal WHERE task_id = ANY(ARRAY(SELECT id FROM gone));
  DELETE FROM :SCHEMA.task_event WHERE task_id = ANY(ARRAY(SELECT id FROM gone));
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION :SCHEMA.task_forget_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE :SCHEMA.task_step, :SCHEMA.task_signal, :SCHEMA.task_event;
  RETURN NULL;
END
$$;

-- whoever may write the task table may write its events
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT DISTINCT grantee, privilege_type FROM information_schema.role_table_grants
           WHERE table_schema = replace(':SCHEMA', '"', '') AND table_name = 'task'
             AND privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE') AND grantee <> current_user
  LOOP
    EXECUTE format('GRANT %s ON :SCHEMA.task_event TO %s', g.privilege_type,
                   CASE g.grantee WHEN 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g.grantee) END);
  END LOOP;
END
$$;
