import type { Executor } from '@leasehold/core';
import { execute } from '@leasehold/core/internal';
import { sql } from 'kysely';

/**
 * Records `messageId` in `<schema>.inbox` unless it is there; true when this call inserted it.
 * Run inside the receiver's transaction: a concurrent insert of the same id waits on the primary
 * key until that transaction ends, then conflicts (committed) or inserts (rolled back), so
 * exactly one transaction applies the message. `schema` must be validated by the caller.
 */
export async function inboxInsert(executor: Executor, schema: string, messageId: string): Promise<boolean> {
  const rows = await execute<{ message_id: string }>(
    executor,
    sql`INSERT INTO ${sql.id(schema, 'inbox')} (message_id) VALUES (${messageId})
        ON CONFLICT (message_id) DO NOTHING
        RETURNING message_id`,
  );
  return rows.length === 1;
}
