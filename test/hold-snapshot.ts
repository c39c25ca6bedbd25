// A session that holds an old snapshot, as a long report would: nothing that becomes dead after
// it started can be vacuumed until it ends. For the tests under a held horizon (test/horizon.ts)
// and the bench scripts that hold one beside a drain; no vitest here, so that those can load it.
import pg from 'pg';

/** Opens a session on `url` and takes a REPEATABLE READ snapshot in it; end it with {@link releaseSnapshot}. */
export async function holdSnapshot(url: string, applicationName: string): Promise<pg.Client> {
  const holder = new pg.Client({ connectionString: url, application_name: applicationName });
  await holder.connect();
  await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await holder.query('SELECT count(*) FROM pg_class');
  return holder;
}

/** Ends the snapshot's transaction and its session. */
export async function releaseSnapshot(holder: pg.Client): Promise<void> {
  await holder.query('ROLLBACK');
  await holder.end();
}
