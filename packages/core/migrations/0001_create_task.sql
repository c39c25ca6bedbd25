-- The generic leased-task table. Lease columns (status … last_error, done_at) follow the design
-- article's outbox table; every table driven by the lease machinery carries the same columns.
CREATE TABLE :SCHEMA.task (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL,
  payload jsonb NOT NULL DEFAULT '{}'::jsonb,
  priority integer NOT NULL DEFAULT 0,
  -- ordering group: when set, the task waits for every earlier task of its group
  group_key text,
  -- while a task with this key is pending or processing, enqueue returns it instead of a new one
  dedup_key text,
  created_at timestamptz NOT NULL DEFAULT now(),
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'processing', 'done', 'dead')),
  -- earliest time the task may be claimed (run-at, backoff, defer)
  available_at timestamptz NOT NULL DEFAULT now(),
  -- times claimed; a crash counts too, so a poison task cannot loop forever
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts integer NOT NULL DEFAULT 12 CHECK (max_attempts > 0),
  -- for people; correctness rests on lease_version alone
  lease_owner text,
  -- a processing task past this time may be claimed again
  lease_until timestamptz,
  -- fencing token: +1 on every claim, checked by every later state change
  lease_version bigint NOT NULL DEFAULT 0,
  last_error text,
  done_at timestamptz,
  -- progress a handler persisted with a fenced write; handed to the next attempt
  checkpoint jsonb
);

-- the design article's two partial indexes
CREATE INDEX task_ready ON :SCHEMA.task (available_at, id) WHERE status = 'pending';
CREATE INDEX task_leased ON :SCHEMA.task (lease_until) WHERE status = 'processing';
-- claim order over every claimable row; finished rows never enter it, so history costs nothing
CREATE INDEX task_claim_order ON :SCHEMA.task (priority DESC, id)
  WHERE status IN ('pending', 'processing');
-- "is an earlier task of my group unfinished?" for the ordered claim
CREATE INDEX task_group ON :SCHEMA.task (group_key, id)
  WHERE group_key IS NOT NULL AND status IN ('pending', 'processing', 'dead');
-- one live task per (name, dedup_key)
CREATE UNIQUE INDEX task_dedup ON :SCHEMA.task (name, dedup_key)
  WHERE dedup_key IS NOT NULL AND status IN ('pending', 'processing');
CREATE INDEX task_dead ON :SCHEMA.task (id) WHERE status = 'dead';
CREATE INDEX task_done_at ON :SCHEMA.task (done_at) WHERE status = 'done';

-- One wake-up per inserting statement; PostgreSQL folds identical notifications of one
-- transaction into one, so a transaction that enqueues many tasks wakes workers once.
CREATE FUNCTION :SCHEMA.notify_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('leasehold:' || TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, '');
  RETURN NULL;
END
$$;

CREATE TRIGGER task_notify_inserted AFTER INSERT ON :SCHEMA.task
  FOR EACH STATEMENT EXECUTE FUNCTION :SCHEMA.notify_inserted();
