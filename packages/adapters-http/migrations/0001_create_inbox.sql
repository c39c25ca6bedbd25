-- The receiving side's inbox: one row per message id applied, written in the same transaction as
-- the effect, so a redelivered message (same id) finds its row and is not applied again.
CREATE TABLE :SCHEMA.inbox (
  -- the sender's stable message id (`webhook-id`, `Idempotency-Key`, outbox id)
  message_id text PRIMARY KEY,
  received_at timestamptz NOT NULL DEFAULT now()
);

-- retention deletes by age
CREATE INDEX inbox_received_at_idx ON :SCHEMA.inbox (received_at);
