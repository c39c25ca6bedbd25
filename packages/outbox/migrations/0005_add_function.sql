-- Add to the outbox from SQL (docs/enqueue-from-sql.md): <schema>.outbox_add(aggregate_type,
-- aggregate_id, event_type, payload, …) records an event in the caller's transaction, with the
-- checks, aggregate ordering and wake-up of the TypeScript outbox.add():
--   - the same bounds as checkEvent (packages/outbox/src/event.ts), each refusal an error with
--     SQLSTATE 22023 (invalid_parameter_value) whose message names the argument, as does the
--     error's column field; a refused call stores nothing;
--   - ordering: createOutbox's orderedEventTypes live in the application's code, so the caller
--     says `ordered => true` for an event type the outbox delivers in order. The event then takes
--     its aggregate's lock ('type:id') until commit, goes in behind the aggregate's head and the
--     aggregate is settled, so ids follow commit order whichever side (SQL or TypeScript) adds;
--   - wake-up: the insert fires the outbox's notify_inserted() trigger, as every add does.
-- max_attempts defaults to 12, createOutbox's default. Core's migration 14 supplies the checks.
--
-- SECURITY INVOKER (the default), no dynamic SQL, search_path pinned: see core migration 14.
CREATE FUNCTION :SCHEMA.outbox_add(
  aggregate_type text,
  aggregate_id text,
  event_type text,
  payload jsonb,
  headers jsonb DEFAULT '{}',
  ordered boolean DEFAULT false,
  max_attempts integer DEFAULT 12
) RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  agg_key text;
  header record;
  message_id bigint;
  head_id_now bigint;
  next_head bigint;
BEGIN
  -- checked in checkEvent's order, so the first fault is the one reported
  IF outbox_add.aggregate_type IS NULL OR outbox_add.aggregate_type = '' OR octet_length(outbox_add.aggregate_type) > 200 THEN
    RAISE EXCEPTION 'outbox_add: expected `aggregate_type` to be a name of 1 to 200 bytes, got %',
      CASE WHEN outbox_add.aggregate_type IS NULL THEN 'NULL' ELSE octet_length(outbox_add.aggregate_type) || ' bytes' END
      USING ERRCODE = '22023', COLUMN = 'aggregate_type';
  END IF;
  -- the group key is 'type:id'; a ':' in the type would let two aggregates share one key
  IF strpos(outbox_add.aggregate_type, ':') > 0 THEN
    RAISE EXCEPTION 'outbox_add: expected `aggregate_type` not to contain '':''' USING ERRCODE = '22023', COLUMN = 'aggregate_type';
  END IF;
  IF outbox_add.aggregate_id IS NULL THEN
    RAISE EXCEPTION 'outbox_add: expected `aggregate_id` to be a key of 1 to 1024 bytes, got NULL' USING ERRCODE = '22023', COLUMN = 'aggregate_id';
  END IF;
  PERFORM :SCHEMA.enqueue_check_key(outbox_add.aggregate_id, 'aggregate_id', 'outbox_add');
  IF outbox_add.event_type IS NULL OR outbox_add.event_type = '' OR octet_length(outbox_add.event_type) > 200 THEN
    RAISE EXCEPTION 'outbox_add: expected `event_type` to be a name of 1 to 200 bytes, got %',
      CASE WHEN outbox_add.event_type IS NULL THEN 'NULL' ELSE octet_length(outbox_add.event_type) || ' bytes' END
      USING ERRCODE = '22023', COLUMN = 'event_type';
  END IF;
  PERFORM :SCHEMA.enqueue_check_payload(outbox_add.payload, 'payload', 'outbox_add');
  -- headers: an object of at most 100 strings, names of 1 to 200 bytes, values of at most 8192
  IF outbox_add.headers IS NULL OR jsonb_typeof(outbox_add.headers) <> 'object' THEN
    RAISE EXCEPTION 'outbox_add: expected `headers` to be a JSON object of strings, got %', coalesce(jsonb_typeof(outbox_add.headers), 'NULL')
      USING ERRCODE = '22023', COLUMN = 'headers';
  END IF;
  IF (SELECT count(*) FROM jsonb_object_keys(outbox_add.headers)) > 100 THEN
    RAISE EXCEPTION 'outbox_add: expected `headers` to hold at most 100 headers, got %', (SELECT count(*) FROM jsonb_object_keys(outbox_add.headers))
      USING ERRCODE = '22023', COLUMN = 'headers';
  END IF;
  FOR header IN SELECT h.key AS name, h.value FROM jsonb_each(outbox_add.headers) AS h LOOP
    IF header.name = '' OR octet_length(header.name) > 200 THEN
      RAISE EXCEPTION 'outbox_add: expected the name of each header in `headers` to be 1 to 200 bytes, got % bytes', octet_length(header.name)
        USING ERRCODE = '22023', COLUMN = 'headers';
    END IF;
    -- the message names the header, never its value (a token, a signature)
    IF jsonb_typeof(header.value) <> 'string' THEN
      RAISE EXCEPTION 'outbox_add: expected `headers.%` to be a string, got %', header.name, jsonb_typeof(header.value)
        USING ERRCODE = '22023', COLUMN = 'headers';
    END IF;
    IF octet_length(header.value #>> '{}') > 8192 THEN
      RAISE EXCEPTION 'outbox_add: expected `headers.%` to be at most 8192 bytes of UTF-8, got %', header.name, octet_length(header.value #>> '{}')
        USING ERRCODE = '22023', COLUMN = 'headers';
    END IF;
  END LOOP;
  IF outbox_add.ordered IS NULL THEN
    RAISE EXCEPTION 'outbox_add: expected `ordered` to be true or false, got NULL' USING ERRCODE = '22023', COLUMN = 'ordered';
  END IF;
  IF outbox_add.max_attempts IS NULL OR outbox_add.max_attempts < 1 OR outbox_add.max_attempts > 1000000 THEN
    RAISE EXCEPTION 'outbox_add: expected `max_attempts` to be an integer between 1 and 1000000, got %', coalesce(outbox_add.max_attempts::text, 'NULL')
      USING ERRCODE = '22023', COLUMN = 'max_attempts';
  END IF;

  IF outbox_add.ordered THEN
    agg_key := outbox_add.aggregate_type || ':' || outbox_add.aggregate_id;
    -- the aggregate's lock until commit, with the table's wake lock shared (leaseLockGroups)
    PERFORM pg_advisory_xact_lock_shared(hashtext('leasehold:wake'), hashtext('leasehold:' || replace(':SCHEMA', '"', '') || '.outbox'));
    INSERT INTO :SCHEMA.outbox_group AS g (group_key) VALUES (agg_key)
      ON CONFLICT (group_key) DO UPDATE SET updated_at = now();
  END IF;

  INSERT INTO :SCHEMA.outbox AS o (aggregate_type, aggregate_id, event_type, payload, headers, group_key, max_attempts, blocked)
  VALUES (outbox_add.aggregate_type, outbox_add.aggregate_id, outbox_add.event_type, outbox_add.payload, outbox_add.headers,
          agg_key, outbox_add.max_attempts, agg_key IS NOT NULL)
  RETURNING o.id INTO message_id;

  IF agg_key IS NOT NULL THEN
    -- settle the aggregate (leaseSettleGroups), a later statement than the lock: a head gone is
    -- replaced by the lowest blocked row; the insert's trigger has sent the wake-up already
    SELECT g.head_id INTO head_id_now FROM :SCHEMA.outbox_group AS g WHERE g.group_key = agg_key;
    IF coalesce((SELECT h.status FROM :SCHEMA.outbox AS h WHERE h.id = head_id_now), 'gone') NOT IN ('pending', 'processing', 'waiting', 'dead') THEN
      SELECT b.id INTO next_head FROM :SCHEMA.outbox AS b
      WHERE b.group_key >= agg_key AND b.group_key <= agg_key AND b.blocked
      ORDER BY b.group_key, b.id LIMIT 1;
      IF next_head IS NULL THEN
        DELETE FROM :SCHEMA.outbox_group AS g WHERE g.group_key = agg_key;
      ELSE
        UPDATE :SCHEMA.outbox AS u SET blocked = false WHERE u.id = next_head;
        UPDATE :SCHEMA.outbox_group AS g SET head_id = next_head, updated_at = now() WHERE g.group_key = agg_key;
      END IF;
    END IF;
  END IF;
  RETURN message_id;
END
$$;
