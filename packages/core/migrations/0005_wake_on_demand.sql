-- Producers notify only while a worker may be asleep, instead of on every inserting statement.
-- PostgreSQL serialises every commit that sends a NOTIFY behind one lock, held through the commit's
-- WAL flush, so one NOTIFY per enqueue made concurrent enqueues wait for each other's disk flushes.
--
-- <table>_wake holds, in epoch milliseconds, until when some worker of the table may be asleep
-- (waiting for a notification). A worker sets it before it sleeps and every second while it
-- sleeps; it lapses a few seconds after the last sleeper woke. It is a sequence, written with
-- setval: not transactional, so every producer sees the latest value at once, whatever its
-- isolation level.
--
-- Every inserting statement takes a shared advisory lock on the table's channel, held until its
-- transaction ends, then reads <table>_wake, and notifies only while it is live. A worker about to
-- sleep first sets <table>_wake, then tries that lock exclusively: only when no producer holds it
-- (so none skipped its NOTIFY and has yet to commit) does it claim once more and sleep; otherwise
-- it claims again shortly. A producer that skipped its NOTIFY therefore either committed before
-- that last claim, which sees its rows, or holds the lock, which keeps the worker from sleeping.
-- Tables without a <table>_wake sequence notify on every statement, as before.
CREATE SEQUENCE :SCHEMA.task_wake MINVALUE 0 START 0;

CREATE OR REPLACE FUNCTION :SCHEMA.notify_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  channel text := 'leasehold:' || TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME;
  wake regclass := to_regclass(format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME || '_wake'));
BEGIN
  IF wake IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock_shared(hashtext('leasehold:wake'), hashtext(channel));
    -- no worker asleep: the ones awake claim again before they sleep
    IF coalesce(pg_sequence_last_value(wake), 0) <= date_part('epoch', clock_timestamp()) * 1000 THEN
      RETURN NULL;
    END IF;
  END IF;
  PERFORM pg_notify(channel, '');
  RETURN NULL;
END
$$;

-- whoever may insert into the table reads the sequence (pg_sequence_last_value needs SELECT),
-- and whoever may update it (a worker) also sets it
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT DISTINCT grantee, privilege_type FROM information_schema.role_table_grants
           WHERE table_schema = replace(':SCHEMA', '"', '') AND table_name = 'task'
             AND privilege_type IN ('INSERT', 'UPDATE') AND grantee <> current_user
  LOOP
    EXECUTE format('GRANT %s ON SEQUENCE :SCHEMA.task_wake TO %s',
                   CASE g.privilege_type WHEN 'INSERT' THEN 'SELECT' ELSE 'SELECT, UPDATE' END,
                   CASE g.grantee WHEN 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g.grantee) END);
  END LOOP;
END
$$;
