-- Recurring tasks (defineSchedule). One row per schedule that a worker's code declares; every
-- scheduler that runs it fires each tick through this row, so a tick enqueues exactly one task
-- however many processes run the schedule: the firer locks the row, enqueues the tick's task and
-- moves last_tick forward in one transaction, and a tick at or before last_tick is never fired.
CREATE TABLE :SCHEMA.schedule (
  name text PRIMARY KEY,
  -- what a tick enqueues, and when, as the code that declared it last said
  task_name text NOT NULL,
  cron text NOT NULL,
  timezone text NOT NULL,
  -- after downtime, how many missed ticks (besides the latest, which always runs) are enqueued
  catch_up integer NOT NULL DEFAULT 0 CHECK (catch_up >= 0),
  -- the latest tick fired or skipped; NULL until the first one
  last_tick timestamptz,
  -- set by a person (leasehold schedules pause); ticks while paused are skipped
  paused_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- when a worker last declared it, and which: a schedule removed from the code goes stale here
  seen_at timestamptz NOT NULL DEFAULT now(),
  seen_by text,
  -- a running scheduler keeps this ahead of now (heartbeat) and sets it to now when it stops: a
  -- scheduler that starts while another is alive leaves the due ticks to it
  alive_until timestamptz
);
