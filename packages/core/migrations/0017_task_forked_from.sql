-- forkTask (docs/workflows.md, "Forking a run"): a new run of a workflow that keeps the steps the
-- original recorded before a given one and runs the rest. The fork links to the task it was forked
-- from. Nullable without a default: PostgreSQL only records the column, it does not rewrite the
-- table; no index, nothing lists by it. Additive: workers of the previous version never read it.
ALTER TABLE :SCHEMA.task ADD COLUMN forked_from bigint;
