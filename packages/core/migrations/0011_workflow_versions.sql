-- Workflow change safety (docs/workflows.md, "Changing workflow code").
--
-- version: the oldest code that can run the task. It starts as the version of the definition that
-- enqueued it (`defineTask(name, { version })`, 1 when none is given) and moves up only when newer
-- code records a patch in the run (`ctx.patched`): from then on the run takes the patched path,
-- which older code does not have. A worker claims only the versions its definitions declare they
-- can run, so old and new workers coexist during a rolling deploy.
--
-- task_step.position: the order in which the run made its recording calls (0, 1, …), and kind:
-- what made the record ('step', 'db', 'sleep', 'spawn', 'signal', 'patch'). Replay checks the
-- name and kind at each position. Both are null for steps recorded before this migration: those
-- runs are not checked, as before. A patch marker has no position (adding or removing a
-- `patched` call moves no step), its name is 'patch:<id>' and its result true or false.
--
-- Additive, with a constant default: PostgreSQL records the columns without rewriting, and
-- workers of the previous version keep running while this is applied.
ALTER TABLE :SCHEMA.task ADD COLUMN version integer NOT NULL DEFAULT 1;
ALTER TABLE :SCHEMA.task ADD CONSTRAINT task_version_check CHECK (version >= 1) NOT VALID;
ALTER TABLE :SCHEMA.task VALIDATE CONSTRAINT task_version_check;

ALTER TABLE :SCHEMA.task_step
  ADD COLUMN position integer,
  ADD COLUMN kind text;

-- "how many runs still depend on patch P": the markers of a patch, by name (few rows per run)
CREATE INDEX task_step_patch ON :SCHEMA.task_step (name, task_id) WHERE kind = 'patch';

-- The task versions each live worker can run, so that runs no live worker can claim are shown
-- (stats, CLI, dashboard) instead of waiting unnoticed. A worker writes its row at start and
-- again every half minute, and deletes it at stop; a row not seen for a few minutes belongs to
-- a worker that died. accepts: {"<task name>": [versions…], …}.
CREATE TABLE :SCHEMA.task_worker (
  owner text PRIMARY KEY,
  accepts jsonb NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  seen_at timestamptz NOT NULL DEFAULT now()
);

-- whoever may write the task table may write the worker list
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT DISTINCT grantee, privilege_type FROM information_schema.role_table_grants
           WHERE table_schema = replace(':SCHEMA', '"', '') AND table_name = 'task'
             AND privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE') AND grantee <> current_user
  LOOP
    EXECUTE format('GRANT %s ON :SCHEMA.task_worker TO %s', g.privilege_type,
                   CASE g.grantee WHEN 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g.grantee) END);
  END LOOP;
END
$$;
