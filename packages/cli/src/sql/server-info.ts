import type { Executor } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';

/** The server's version and the database the URL points at. Takes no locks. */
export async function serverInfo(executor: Executor): Promise<{ serverVersion: string; database: string }> {
  const [row] = await execute<{ server_version: string; database: string }>(
    executor,
    sql`SELECT current_setting('server_version') AS server_version, current_database() AS database`,
  );
  // '15.2 (Debian 15.2-1)' → '15.2'
  return { serverVersion: row!.server_version.split(' ')[0]!, database: row!.database };
}
