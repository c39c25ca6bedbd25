import { sql, type RawBuilder } from 'kysely';

/**
 * The fence every state change after a claim carries: the row is still `processing` under the
 * token the claim handed out. `lease_until` is deliberately absent, so an expired lease that
 * nobody took over still lets its holder write. `row` is the updated table's alias; `id` and
 * `version` are the token, as parameters or as columns of a joined input.
 */
export function fence(row: string, id: RawBuilder<unknown> | string, version: RawBuilder<unknown> | number): RawBuilder<unknown> {
  const r = (column: string) => sql.ref(`${row}.${column}`);
  return sql`${r('id')} = ${id} AND ${r('status')} = 'processing' AND ${r('lease_version')} = ${version}`;
}
