-- Deleting tasks (a purge of done rows, above all) deletes their steps and signals in the delete
-- trigger of migration 8. Signals were indexed only while unconsumed, so every batch of a purge
-- read every signal ever sent (550,000 to delete the signals of 500 tasks); and with statistics
-- taken while the tables were empty, the step delete read every step (1,000,000). An index on the
-- signals' task, and the deleted ids as an array, which the planner probes by index whatever it
-- expects of the tables (see `byPrimaryKey` in the core's `fence.ts`). Applies with workers
-- running: the trigger keeps calling the same function (CREATE OR REPLACE keeps it).
CREATE INDEX task_signal_task ON :SCHEMA.task_signal (task_id);

CREATE OR REPLACE FUNCTION :SCHEMA.task_forget_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM :SCHEMA.task_step WHERE task_id = ANY(ARRAY(SELECT id FROM gone));
  DELETE FROM :SCHEMA.task_signal WHERE task_id = ANY(ARRAY(SELECT id FROM gone));
  RETURN NULL;
END
$$;
