import type { LeasedTable } from '@leasehold/core';
import { sql, type RawBuilder } from 'kysely';

/** `"schema"."table"` of a leased table, whose names core validated when it was defined. */
export function tableRef(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql.id(table.schema, table.table);
}

/** `"schema"."<table>_group"`: one row per ordering group with unfinished rows. */
export function groupTableRef(table: LeasedTable<unknown>): RawBuilder<unknown> {
  return sql.id(table.schema, table.groupTable);
}
