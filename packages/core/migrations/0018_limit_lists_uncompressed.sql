-- A limit's row holds the leases that hold its slots and its recent starts as arrays, and every
-- claim of the limit rewrites them (docs/flow-control.md). At a concurrency of a thousand the
-- lists run to some 20 kB, and pglz compressed them on every write: 7 % of a limited claim's
-- backend CPU (issue 32). Out of line and uncompressed, a write copies them instead.
-- Metadata only, no rewrite: a row keeps its compressed values until its next write.
ALTER TABLE :SCHEMA.task_limit
  ALTER COLUMN holder_ids SET STORAGE EXTERNAL,
  ALTER COLUMN holder_versions SET STORAGE EXTERNAL,
  ALTER COLUMN holder_keys SET STORAGE EXTERNAL,
  ALTER COLUMN start_at SET STORAGE EXTERNAL,
  ALTER COLUMN start_keys SET STORAGE EXTERNAL;
