-- notify_inserted() (migration 5) does its work once per transaction and table. It runs per
-- inserting statement, and per row for a slot freed under a limit (migration 7) or a parked run
-- woken (migration 8): a finalize of 256 limited rows ran it 256 times, some 3 µs each (a
-- catalog lookup, the wake lock, the sequence), a quarter of that statement's server time
-- (issue 32). Once is enough: the first call takes the wake lock shared, held until commit, so
-- no worker can go to sleep past this transaction's rows (it claims again after the commit), and
-- a NOTIFY it queued is delivered once at commit however often it is repeated. Each table's
-- channel is recorded in a transaction-local setting; a rolled-back subtransaction drops the
-- setting with the lock and the NOTIFY it took.
CREATE OR REPLACE FUNCTION :SCHEMA.notify_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  channel text := 'leasehold:' || TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME;
  seen text := current_setting('leasehold.notify_seen', true);
  wake regclass;
BEGIN
  IF seen IS NOT NULL AND strpos(seen, E'\n' || channel || E'\n') > 0 THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('leasehold.notify_seen', coalesce(nullif(seen, ''), E'\n') || channel || E'\n', true);
  wake := to_regclass(format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME || '_wake'));
  IF wake IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock_shared(hashtext('leasehold:wake'), hashtext(channel));
    IF coalesce(pg_sequence_last_value(wake), 0) <= date_part('epoch', clock_timestamp()) * 1000 THEN
      RETURN NULL;
    END IF;
  END IF;
  PERFORM pg_notify(channel, '');
  RETURN NULL;
END
$$;
