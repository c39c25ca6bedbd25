-- A task under a limit that leaves 'processing' frees a slot, and task_notify_slot_freed (migration
-- 7) wakes the workers waiting for one. It called notify_inserted() for every such row, and the
-- function does its work once per transaction (migration 19), so every row after the first paid a
-- PL/pgSQL call for nothing: 1-2 µs a row, about a tenth of a worker's write of finished tasks
-- under a limit (issue 32, bench/RESULTS.md). The trigger's WHEN now also asks whether this
-- transaction did that work already (notify_inserted records the table's channel in the setting
-- leasehold.notify_seen): a row after that costs a comparison, not a call. A worker's write of
-- rows under limits does the work itself before its UPDATE reaches a row (wakeOnceCtes), so none
-- of them calls the function. Within any other statement the rows still call it each (a WHEN is
-- evaluated as the row is written, before the statement's triggers run), as before.
--
-- Applies with workers running: one of the previous version still gets its wake-up from the
-- trigger, for every row, as before. DROP TRIGGER locks the table for the moment it takes.
DO $$
BEGIN
  EXECUTE format($t$
    DROP TRIGGER task_notify_slot_freed ON :SCHEMA.task;
    CREATE TRIGGER task_notify_slot_freed AFTER UPDATE OF status ON :SCHEMA.task
      FOR EACH ROW WHEN (OLD.flow IS NOT NULL AND OLD.status = 'processing' AND NEW.status <> 'processing'
                         AND strpos(coalesce(current_setting('leasehold.notify_seen', true), ''), %L) = 0)
      EXECUTE FUNCTION :SCHEMA.notify_inserted()
  $t$, E'\n' || 'leasehold:' || replace(':SCHEMA', '"', '') || '.task' || E'\n');
END
$$;
