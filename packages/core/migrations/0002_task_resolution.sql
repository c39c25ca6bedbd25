-- What a person decided about a task while it was dead ('retried: …' / 'skipped: …'), in the
-- same columns as the outbox table, so the dead-letter operations (leaseRetryDeadMany,
-- leaseSkipDeadMany) work alike on both and last_error keeps why the task died.
-- Nullable without a default: PostgreSQL only records the columns, it does not rewrite the table.
ALTER TABLE :SCHEMA.task
  ADD COLUMN resolution text,
  ADD COLUMN resolved_at timestamptz;
