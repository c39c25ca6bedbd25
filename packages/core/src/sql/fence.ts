import { sql, type RawBuilder } from 'kysely';

/**
 * `<row>.status = <status>` under the "C" collation, which decides equality exactly as the
 * column's own (deterministic) collation does but keeps the planner from answering it with a
 * partial index on that status. For a statement that reaches its rows another way (by primary
 * key, through another index, within an id window): with statistics that saw few rows in that
 * status, the planner took the status's index instead and read every row in it. `row` is the
 * table's alias, or null for an unqualified column; `status` is a constant of the caller's,
 * never input.
 *
 * @example
 * sql`SELECT id FROM ${t} AS t WHERE t.id = ${id} AND ${statusIs('t', 'processing')}`
 */
export function statusIs(row: string | null, status: string): RawBuilder<unknown> {
  return sql`(${sql.ref(row === null ? 'status' : `${row}.status`)} COLLATE "C") = ${sql.lit(status)}`;
}

/**
 * The fence every state change after a claim carries: the row is still `processing` under the
 * token the claim handed out. `lease_until` is deliberately absent, so an expired lease that
 * nobody took over still lets its holder write. `row` is the updated table's alias; `id` and
 * `version` are the token, as parameters or as columns of a joined input. The row is reached by
 * its id ({@link statusIs}): with statistics that saw few processing rows, a checkpoint of one
 * task was planned on the index of processing rows and read all 51,000 in flight to find its own.
 */
export function fence(row: string, id: RawBuilder<unknown> | string, version: RawBuilder<unknown> | number): RawBuilder<unknown> {
  const r = (column: string) => sql.ref(`${row}.${column}`);
  return sql`${r('id')} = ${id} AND ${statusIs(row, 'processing')} AND ${r('lease_version')} = ${version}`;
}

/**
 * The rows whose ids the CTE `idsFrom` lists (in its column `idColumn`) and whose status is
 * `status`, each reached by its primary key whatever the table's statistics say:
 * - the ids come as `ANY(ARRAY(SELECT …))`, an array the planner cannot see into, so it plans a
 *   few primary-key lookups;
 * - the status is compared by {@link statusIs}, so the planner cannot take a partial index on
 *   it for the scan. Planned on the index of processing rows, a fenced write of 1,000 rows hashed
 *   every processing row of the table (42 of 58 ms with 50,000 in flight), or, when the
 *   statistics said there were none, tested each of them against every id; a heartbeat took 47 s
 *   for 2,000 leases that way.
 * `row` is the scanned table's alias; `status` is a constant of the caller's, never input.
 */
export function byPrimaryKey(row: string, idsFrom: string, status: string, idColumn = 'id'): RawBuilder<unknown> {
  const r = (column: string) => sql.ref(`${row}.${column}`);
  return sql`${r('id')} = ANY(ARRAY(SELECT ${sql.ref(idColumn)} FROM ${sql.table(idsFrom)})) AND ${statusIs(row, status)}`;
}

/**
 * {@link fence} for a statement that writes many rows, each under its own token: `input` names a
 * CTE with columns `id` and `version`, one row per token; `idsFrom` (a CTE with a column `id`)
 * narrows the rows reached to its ids, the ones a statement locked first, say. Each row is reached
 * by its primary key (see {@link byPrimaryKey}).
 */
export function fenceEach(row: string, input: string, idsFrom: string = input): RawBuilder<unknown> {
  const r = (column: string) => sql.ref(`${row}.${column}`);
  const i = (column: string) => sql.ref(`${input}.${column}`);
  return sql`${byPrimaryKey(row, idsFrom, 'processing')} AND ${r('id')} = ${i('id')} AND ${r('lease_version')} = ${i('version')}`;
}
