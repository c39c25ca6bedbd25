-- Enqueue from SQL (docs/enqueue-from-sql.md): <schema>.enqueue(name, payload, …) adds a task in
-- the caller's transaction, so a trigger, a migration or a service in another language enqueues
-- with the same checks, dedup, ordering and wake-up as the TypeScript enqueue():
--   - the same bounds (packages/core/src/input/limits.ts), each refusal an error with SQLSTATE
--     22023 (invalid_parameter_value) whose message names the argument, as does the error's
--     column field; a refused call stores nothing;
--   - dedup: while a task of this name and dedup_key is pending or processing, its id is
--     returned instead of a new one, through the same unique index and retry as enqueue();
--   - ordering: a task with a group_key takes its group's lock until commit, goes in behind the
--     group's head and the group is settled, as leaseLockGroups / leaseSettleGroups do;
--   - limits: the task runs under the limit its workers recorded for its name (task_limit), with
--     limit_key required for a limit with per-key bounds and refused otherwise;
--   - wake-up: the insert fires the table's notify_inserted() trigger, as every enqueue does.
-- What only the task's definition knows is an argument with enqueue()'s default: priority 0,
-- max_attempts 12, version 1; an ordered task needs its group_key. The payload validator of a
-- definition (`validate`) runs before the task runs: a payload it refuses sends the task dead.
--
-- SECURITY INVOKER (the default): the caller needs the privileges a TypeScript producer needs,
-- so EXECUTE, which every role has on a new function, grants nothing. No dynamic SQL: every
-- name below is fixed when the migration runs, and search_path is pinned so that no object of
-- the caller's schemas can stand in for a built-in. Additive: nothing else changes.
CREATE FUNCTION :SCHEMA.enqueue(
  name text,
  payload jsonb,
  run_at timestamptz DEFAULT NULL,
  delay interval DEFAULT NULL,
  priority integer DEFAULT 0,
  group_key text DEFAULT NULL,
  dedup_key text DEFAULT NULL,
  max_attempts integer DEFAULT 12,
  limit_key text DEFAULT NULL,
  version integer DEFAULT 1
) RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  due timestamptz;
  limit_name text;
  limit_keyed boolean;
  task_id bigint;
  head_id_now bigint;
  next_head bigint;
BEGIN
  -- checked in enqueue()'s order, so the first fault is the one reported
  IF enqueue.name IS NULL OR enqueue.name = '' OR octet_length(enqueue.name) > 200 THEN
    RAISE EXCEPTION 'enqueue: expected `name` to be a task name of 1 to 200 bytes, got %',
      CASE WHEN enqueue.name IS NULL THEN 'NULL' ELSE octet_length(enqueue.name) || ' bytes' END
      USING ERRCODE = '22023', COLUMN = 'name';
  END IF;
  PERFORM :SCHEMA.enqueue_check_payload(enqueue.payload, 'payload', 'enqueue');
  IF enqueue.priority IS NULL THEN
    RAISE EXCEPTION 'enqueue: expected `priority` to be an integer, got NULL' USING ERRCODE = '22023', COLUMN = 'priority';
  END IF;
  PERFORM :SCHEMA.enqueue_check_key(enqueue.group_key, 'group_key', 'enqueue');
  PERFORM :SCHEMA.enqueue_check_key(enqueue.dedup_key, 'dedup_key', 'enqueue');
  IF enqueue.max_attempts IS NULL OR enqueue.max_attempts < 1 OR enqueue.max_attempts > 1000000 THEN
    RAISE EXCEPTION 'enqueue: expected `max_attempts` to be an integer between 1 and 1000000, got %', coalesce(enqueue.max_attempts::text, 'NULL')
      USING ERRCODE = '22023', COLUMN = 'max_attempts';
  END IF;
  IF enqueue.run_at IS NOT NULL AND NOT isfinite(enqueue.run_at) THEN
    RAISE EXCEPTION 'enqueue: expected `run_at` to be a finite time, got %', enqueue.run_at USING ERRCODE = '22023', COLUMN = 'run_at';
  END IF;
  -- a duration kept in the database: from 0 to 100 years (INPUT_LIMITS.delayMs)
  IF enqueue.delay IS NOT NULL AND (enqueue.delay < interval '0' OR enqueue.delay > interval '36500 days') THEN
    RAISE EXCEPTION 'enqueue: expected `delay` to be from 0 to 36500 days, got %', enqueue.delay USING ERRCODE = '22023', COLUMN = 'delay';
  END IF;
  IF enqueue.version IS NULL OR enqueue.version < 1 THEN
    RAISE EXCEPTION 'enqueue: expected `version` to be an integer >= 1, got %', coalesce(enqueue.version::text, 'NULL')
      USING ERRCODE = '22023', COLUMN = 'version';
  END IF;

  -- the task's limit, as the latest worker that declared one for this name recorded it
  -- (limitRegisterMany); a limit with a per-key bound counts the task under limit_key
  SELECT l.name, l.concurrency_per_key IS NOT NULL OR l.rate_per_key IS NOT NULL INTO limit_name, limit_keyed
  FROM :SCHEMA.task_limit AS l WHERE enqueue.name = ANY(l.task_names)
  ORDER BY l.seen_at DESC, l.name LIMIT 1;
  IF limit_name IS NULL AND enqueue.limit_key IS NOT NULL THEN
    RAISE EXCEPTION 'enqueue: task "%" runs under no limit: `limit_key` has nothing to count', enqueue.name
      USING ERRCODE = '22023', COLUMN = 'limit_key',
            HINT = 'A limit is known here once a worker that runs the task under it has started.';
  ELSIF limit_name IS NOT NULL AND NOT limit_keyed AND enqueue.limit_key IS NOT NULL THEN
    RAISE EXCEPTION 'enqueue: limit "%" of task "%" has no per-key bound: `limit_key` has nothing to count', limit_name, enqueue.name
      USING ERRCODE = '22023', COLUMN = 'limit_key';
  ELSIF limit_keyed AND enqueue.limit_key IS NULL THEN
    RAISE EXCEPTION 'enqueue: limit "%" of task "%" counts per key: enqueue needs a `limit_key`', limit_name, enqueue.name
      USING ERRCODE = '22023', COLUMN = 'limit_key';
  END IF;
  PERFORM :SCHEMA.enqueue_check_key(enqueue.limit_key, 'limit_key', 'enqueue');

  due := coalesce(enqueue.run_at, now() + coalesce(enqueue.delay, interval '0'));

  IF enqueue.group_key IS NOT NULL THEN
    -- the group's lock until commit, with the table's wake lock shared (leaseLockGroups)
    PERFORM pg_advisory_xact_lock_shared(hashtext('leasehold:wake'), hashtext('leasehold:' || replace(':SCHEMA', '"', '') || '.task'));
    INSERT INTO :SCHEMA.task_group AS g (group_key) VALUES (enqueue.group_key)
      ON CONFLICT (group_key) DO UPDATE SET updated_at = now();
  END IF;

  -- a dedup key that met a row this statement could not see (a concurrent enqueue that committed
  -- while this one waited for it) is looked up again by the next statement, which sees it, or
  -- inserted anew if that task finished meanwhile (taskInsertMany's insertResolving)
  FOR n IN 1..10 LOOP
    INSERT INTO :SCHEMA.task AS t
      (name, payload, priority, group_key, dedup_key, max_attempts, available_at, blocked, scheduled, flow, flow_key, version)
    VALUES (enqueue.name, enqueue.payload, enqueue.priority, enqueue.group_key, enqueue.dedup_key, enqueue.max_attempts, due,
            enqueue.group_key IS NOT NULL, due > now(), limit_name,
            CASE WHEN limit_name IS NULL THEN NULL ELSE coalesce(enqueue.limit_key, '') END, enqueue.version)
    ON CONFLICT (name, dedup_key) WHERE dedup_key IS NOT NULL AND status IN ('pending', 'processing')
    DO NOTHING
    RETURNING t.id INTO task_id;
    EXIT WHEN task_id IS NOT NULL;
    SELECT live.id INTO task_id FROM :SCHEMA.task AS live
    WHERE live.name = enqueue.name AND live.dedup_key = enqueue.dedup_key AND live.status IN ('pending', 'processing')
    LIMIT 1;
    EXIT WHEN task_id IS NOT NULL;
  END LOOP;
  IF task_id IS NULL THEN
    RAISE EXCEPTION 'enqueue: tasks of dedup key "%" kept finishing while being enqueued', enqueue.dedup_key USING ERRCODE = '40001';
  END IF;

  IF enqueue.group_key IS NOT NULL THEN
    -- settle the group (leaseSettleGroups), a later statement than the lock above: it sees every
    -- row another writer of the group committed. A head gone (never chosen, or finished) is
    -- replaced by the group's lowest blocked row; the insert's trigger has already sent this
    -- transaction's wake-up, so none is needed for the new head.
    SELECT g.head_id INTO head_id_now FROM :SCHEMA.task_group AS g WHERE g.group_key = enqueue.group_key;
    IF coalesce((SELECT h.status FROM :SCHEMA.task AS h WHERE h.id = head_id_now), 'gone') NOT IN ('pending', 'processing', 'waiting', 'dead') THEN
      SELECT b.id INTO next_head FROM :SCHEMA.task AS b
      WHERE b.group_key >= enqueue.group_key AND b.group_key <= enqueue.group_key AND b.blocked
      ORDER BY b.group_key, b.id LIMIT 1;
      IF next_head IS NULL THEN
        DELETE FROM :SCHEMA.task_group AS g WHERE g.group_key = enqueue.group_key;
      ELSE
        UPDATE :SCHEMA.task AS u SET blocked = false WHERE u.id = next_head;
        UPDATE :SCHEMA.task_group AS g SET head_id = next_head, updated_at = now() WHERE g.group_key = enqueue.group_key;
      END IF;
    END IF;
  END IF;
  RETURN task_id;
END
$$;

-- A key (group, dedup, limit key, aggregate id): NULL for none, else 1 to 1,024 bytes
-- (INPUT_LIMITS.keyBytes: keys are indexed). `fn` names the calling function in the message.
CREATE FUNCTION :SCHEMA.enqueue_check_key(key text, argument text, fn text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF key IS NOT NULL AND (key = '' OR octet_length(key) > 1024) THEN
    RAISE EXCEPTION '%: expected `%` to be a key of 1 to 1024 bytes, got % bytes', fn, argument, octet_length(key)
      USING ERRCODE = '22023', COLUMN = argument;
  END IF;
END
$$;

-- A payload: JSON (any value, JSON null included, but not SQL NULL) of at most 32 MiB of text
-- as PostgreSQL writes it and nested at most 256 arrays or objects deep (INPUT_LIMITS.jsonBytes,
-- jsonDepth): what enqueue() accepts, so every tool on the payload's way (the worker's JSON
-- parser, validators, receivers) can read it.
CREATE FUNCTION :SCHEMA.enqueue_check_payload(payload jsonb, argument text, fn text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  bytes integer;
BEGIN
  IF payload IS NULL THEN
    RAISE EXCEPTION '%: expected `%` to be JSON, got NULL', fn, argument
      USING ERRCODE = '22023', COLUMN = argument, HINT = 'Pass ''null''::jsonb for a JSON null, ''{}'' for an empty object.';
  END IF;
  bytes := octet_length(payload::text);
  IF bytes > 33554432 THEN
    RAISE EXCEPTION '%: expected `%` to be at most 33554432 bytes of JSON, got %', fn, argument, bytes
      USING ERRCODE = '22023', COLUMN = argument;
  END IF;
  -- deeper than 256 takes more than 513 characters (each level opens and closes)
  IF bytes > 513 AND jsonb_path_exists(payload, 'strict $.**{256 to last} ? (@.type() == "array" || @.type() == "object")') THEN
    RAISE EXCEPTION '%: expected `%` to be JSON PostgreSQL can store, but it is nested deeper than 256 levels', fn, argument
      USING ERRCODE = '22023', COLUMN = argument;
  END IF;
END
$$;

-- enqueue() reads the task's limit: whoever may insert into the task table may read the limits
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT DISTINCT grantee FROM information_schema.role_table_grants
           WHERE table_schema = replace(':SCHEMA', '"', '') AND table_name = 'task'
             AND privilege_type = 'INSERT' AND grantee <> current_user
  LOOP
    EXECUTE format('GRANT SELECT ON :SCHEMA.task_limit TO %s',
                   CASE g.grantee WHEN 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g.grantee) END);
  END LOOP;
END
$$;
