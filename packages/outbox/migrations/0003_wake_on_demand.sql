-- The outbox's wake-up sequence: producers of outbox messages notify only while a dispatcher may
-- be asleep, not on every inserting statement (core migration 5 explains the protocol; core's
-- notify_inserted(), which the outbox's insert trigger runs, finds this sequence by its name).
CREATE SEQUENCE :SCHEMA.outbox_wake MINVALUE 0 START 0;

-- whoever may insert into the table reads the sequence (pg_sequence_last_value needs SELECT),
-- and whoever may update it (a dispatcher) also sets it
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT DISTINCT grantee, privilege_type FROM information_schema.role_table_grants
           WHERE table_schema = replace(':SCHEMA', '"', '') AND table_name = 'outbox'
             AND privilege_type IN ('INSERT', 'UPDATE') AND grantee <> current_user
  LOOP
    EXECUTE format('GRANT %s ON SEQUENCE :SCHEMA.outbox_wake TO %s',
                   CASE g.privilege_type WHEN 'INSERT' THEN 'SELECT' ELSE 'SELECT, UPDATE' END,
                   CASE g.grantee WHEN 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g.grantee) END);
  END LOOP;
END
$$;
