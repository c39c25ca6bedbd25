-- One list of statuses for every leased table (core's TASK_STATUSES): core migration 8 added
-- 'waiting' (a parked workflow) and 'cancelled'. Outbox messages never enter either today; the
-- constraint lists them so both tables accept the same values the shared lease code writes.
ALTER TABLE :SCHEMA.outbox DROP CONSTRAINT outbox_status_check;
ALTER TABLE :SCHEMA.outbox ADD CONSTRAINT outbox_status_check
  CHECK (status IN ('pending', 'processing', 'waiting', 'done', 'dead', 'cancelled')) NOT VALID;
ALTER TABLE :SCHEMA.outbox VALIDATE CONSTRAINT outbox_status_check;
