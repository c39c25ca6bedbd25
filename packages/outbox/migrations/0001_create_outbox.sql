-- The design article's outbox table (section 3.1) with the lease columns of core's task table,
-- so core's claim, reap, fenced finalize and heartbeat drive it unchanged.
CREATE TABLE :SCHEMA.outbox (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  aggregate_type text NOT NULL,
  aggregate_id text NOT NULL,
  event_type text NOT NULL,
  payload jsonb NOT NULL,
  -- string headers handed to the publisher (trace ids, content type …)
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- from here on: the dispatcher's columns, exactly as on core's task table
  priority integer NOT NULL DEFAULT 0,
  -- 'aggregate_type:aggregate_id' for ordered event types; NULL = no ordering
  group_key text,
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'processing', 'done', 'dead')),
  -- earliest time the message may be claimed (backoff, defer)
  available_at timestamptz NOT NULL DEFAULT now(),
  -- times claimed; a crash counts too, so a poison message cannot loop forever
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts integer NOT NULL DEFAULT 12 CHECK (max_attempts > 0),
  -- for people; correctness rests on lease_version alone
  lease_owner text,
  -- a processing message past this time may be claimed again
  lease_until timestamptz,
  -- fencing token: +1 on every claim, checked by every later state change
  lease_version bigint NOT NULL DEFAULT 0,
  last_error text,
  done_at timestamptz,
  -- what a person decided about the message while it was dead ('retried: …' / 'skipped: …')
  resolution text,
  resolved_at timestamptz
);

-- the design article's two partial indexes
CREATE INDEX outbox_ready ON :SCHEMA.outbox (available_at, id) WHERE status = 'pending';
CREATE INDEX outbox_leased ON :SCHEMA.outbox (lease_until) WHERE status = 'processing';
-- claim order over every claimable row; delivered rows never enter it, so history costs nothing
CREATE INDEX outbox_claim_order ON :SCHEMA.outbox (priority DESC, id)
  WHERE status IN ('pending', 'processing');
-- "is an earlier message of my aggregate unfinished?" for the ordered claim (article section 5)
CREATE INDEX outbox_group ON :SCHEMA.outbox (group_key, id)
  WHERE group_key IS NOT NULL AND status IN ('pending', 'processing', 'dead');
-- the dead-letter listing and the retention purge
CREATE INDEX outbox_dead ON :SCHEMA.outbox (id) WHERE status = 'dead';
CREATE INDEX outbox_done_at ON :SCHEMA.outbox (done_at) WHERE status = 'done';

-- one wake-up per inserting statement, on channel 'leasehold:<schema>.outbox'
CREATE TRIGGER outbox_notify_inserted AFTER INSERT ON :SCHEMA.outbox
  FOR EACH STATEMENT EXECUTE FUNCTION :SCHEMA.notify_inserted();
