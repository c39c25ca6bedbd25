import { sql, type RawBuilder } from 'kysely';
import type { LeasedTable } from '../leased-table.js';

/** `"schema"."table"` for a validated {@link LeasedTable}. */
export function tableRef(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql.id(table.schema, table.table);
}

/** `"schema"."<table>_group"`: the table's ordering groups (see {@link LeasedTable.groupTable}). */
export function groupTableRef(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql.id(table.schema, table.groupTable);
}

/** The lease columns every claim returns, plus the table's own extra columns. */
export function returningColumns(table: LeasedTable<unknown>, alias: string): RawBuilder<unknown> {
  const columns = [...LEASE_COLUMNS, ...table.extraColumns.filter((c) => !LEASE_COLUMNS.includes(c))];
  return sql.join(columns.map((c) => sql.ref(`${alias}.${c}`)));
}

/** Columns every claim returns, in this order (the reap branch of the claim mirrors it). */
export const LEASE_COLUMNS: readonly string[] = [
  'id',
  'lease_version',
  'attempts',
  'max_attempts',
  'lease_owner',
  'lease_until',
  'created_at',
  'group_key',
];
