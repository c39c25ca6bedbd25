-- The W3C trace context (https://www.w3.org/TR/trace-context/) of the code that enqueued the task,
-- so that the worker's span for the task continues the producer's trace. Written by enqueue when
-- OpenTelemetry is active, read back by the claim; NULL otherwise, and for rows older than this.
-- Nullable without a default: PostgreSQL only records the columns, it does not rewrite the table.
ALTER TABLE :SCHEMA.task
  ADD COLUMN traceparent text,
  ADD COLUMN tracestate text;
