import { validateIdentifier } from './identifier.js';
import { checkOptionKeys, optionKeys } from './input/options.js';
import type { ClaimJson } from './sql/claim-json.js';
import { TASK_CLAIM_JSON } from './sql/task-claim-json.js';

/**
 * A table the lease machinery can drive. It must carry the lease columns of the core `task`
 * table: `id`, `status`, `priority`, `group_key`, `available_at`, `attempts`, `max_attempts`,
 * `lease_owner`, `lease_until`, `lease_version`, `last_error`, `created_at`, `done_at`,
 * `blocked`, `scheduled`, and a group table `<table>_group` (core's migration 3 shows both),
 * plus a name column (what handlers are chosen by) and `payload`. The dead-letter operations
 * (`leaseRetryDeadMany`, `leaseSkipDeadMany`) also write `resolution` and `resolved_at`.
 */
export interface LeasedTable<Row = Record<string, unknown>> {
  /** Validated schema name. */
  readonly schema: string;
  /** Validated table name. */
  readonly table: string;
  /** Column a worker filters on to claim only what it can handle (`name`, `event_type`). */
  readonly nameColumn: string;
  /** Extra columns returned by claim, besides the lease columns. */
  readonly extraColumns: readonly string[];
  /** Maps a raw returned row's extra columns to the table's own row shape. */
  readonly mapRow: (raw: Record<string, unknown>) => Row;
  /**
   * Claims send this table's rows as JSON (see `claim-json.ts`), for the tables leasehold itself
   * defines (see {@link withClaimJson}); other tables' rows come one protocol row each.
   * @internal
   */
  readonly claimJson?: ClaimJson<Row> | undefined;
  /** NOTIFY channel that inserts into this table signal (see the `notify_inserted` trigger). */
  readonly channel: string;
  /**
   * Validated name of the table's group table (`<table>_group`): one row per ordering group with
   * unfinished rows, which the group's producers and finishers lock (see `docs/ordering.md`).
   */
  readonly groupTable: string;
  /**
   * Validated name of the table's limit table (`<table>_limit`, see `docs/flow-control.md`) when
   * its rows can run under limits (`flow`, `flow_key` columns): core's `task` table. Undefined
   * for tables without them, whose claim is unchanged.
   */
  readonly limitTable?: string | undefined;
  /**
   * Its rows can be parked (`waiting`, core migration 8): every claim moves the parked rows
   * whose wake time has come back to `pending`. Core's `task` table.
   */
  readonly waits?: boolean | undefined;
}

/** Options of {@link defineLeasedTable}. */
export interface LeasedTableOptions<Row> {
  /** Schema of the table. */
  schema: string;
  /** The table, with the lease columns (see {@link LeasedTable}). */
  table: string;
  /** The column a worker's `names` filter matches (the task name, the outbox's topic …). */
  nameColumn: string;
  /** Columns of the table's own row that a claim returns, besides the lease columns. */
  extraColumns: readonly string[];
  /** Builds the table's row from those columns (`raw` is keyed by column name). */
  mapRow: (raw: Record<string, unknown>) => Row;
  /** The table has the `flow` columns and a `<table>_limit` table. @defaultValue false */
  limits?: boolean;
  /** Its rows can be parked in `waiting` (core's task table, migration 8). @defaultValue false */
  waits?: boolean;
}

const LEASED_TABLE_OPTIONS = optionKeys<LeasedTableOptions<unknown>>()('defineLeasedTable', ['schema', 'table', 'nameColumn', 'extraColumns', 'mapRow', 'limits', 'waits']);

/**
 * Describes a table that carries the lease columns, so claim, reap, finalize and heartbeat work
 * on it unchanged. The outbox package describes its `outbox` table with this.
 */
export function defineLeasedTable<Row>(options: LeasedTableOptions<Row>): LeasedTable<Row> {
  checkOptionKeys(options, LEASED_TABLE_OPTIONS);
  const schema = validateIdentifier(options.schema, 'schema');
  const table = validateIdentifier(options.table, 'table');
  const groupTable = validateIdentifier(`${table}_group`, 'table');
  const nameColumn = validateIdentifier(options.nameColumn, 'nameColumn');
  const extraColumns = options.extraColumns.map((c) => validateIdentifier(c, 'extraColumns'));
  const limitTable = options.limits === true ? validateIdentifier(`${table}_limit`, 'table') : undefined;
  return Object.freeze({
    schema,
    table,
    nameColumn,
    extraColumns: Object.freeze(extraColumns),
    mapRow: options.mapRow,
    channel: `leasehold:${schema}.${table}`,
    groupTable,
    limitTable,
    waits: options.waits === true,
  });
}

/** The row shape of the core `task` table, beyond the lease columns. */
export interface TaskRow {
  readonly name: string;
  readonly payload: unknown;
  readonly priority: number;
  readonly groupKey: string | null;
  readonly dedupKey: string | null;
  /** What the last attempt stored with `ctx.checkpoint()`, or null. */
  readonly checkpoint: unknown;
  /** W3C trace context of the code that enqueued the task (OpenTelemetry), or null. */
  readonly traceparent: string | null;
  readonly tracestate: string | null;
  /**
   * When this attempt became claimable (database time): enqueued and due, or its retry's backoff
   * or deferral over. What the `leasehold.task.wait.duration` histogram counts from.
   */
  readonly availableAt: Date;
  /** The task that spawned this one as a child (`ctx.spawn`), or null. */
  readonly parentId: string | null;
}

/** Task tables made so far, by schema: every `enqueue` asks for one, and they never change. */
const taskTables = new Map<string, LeasedTable<TaskRow>>();

/** The core `task` table in `schema` (default `leasehold`). */
export function taskTable(schema = 'leasehold'): LeasedTable<TaskRow> {
  let table = taskTables.get(schema);
  if (table === undefined) {
    table = defineTaskTable(schema); // validates `schema` (throws before anything is kept)
    if (taskTables.size < 100) taskTables.set(schema, table);
  }
  return table;
}

function defineTaskTable(schema: string): LeasedTable<TaskRow> {
  const table = defineLeasedTable<TaskRow>({
    schema,
    table: 'task',
    nameColumn: 'name',
    extraColumns: ['name', 'payload', 'priority', 'group_key', 'dedup_key', 'checkpoint', 'traceparent', 'tracestate', 'available_at', 'parent_id'],
    // rows run under limits (core migration 7, docs/flow-control.md)
    limits: true,
    // rows park while a workflow sleeps or waits (core migration 8, docs/workflows.md)
    waits: true,
    mapRow: (raw) => ({
      name: raw.name as string,
      payload: raw.payload,
      priority: raw.priority as number,
      groupKey: (raw.group_key as string | null) ?? null,
      dedupKey: (raw.dedup_key as string | null) ?? null,
      checkpoint: raw.checkpoint ?? null,
      traceparent: (raw.traceparent as string | null) ?? null,
      tracestate: (raw.tracestate as string | null) ?? null,
      availableAt: raw.available_at as Date,
      parentId: raw.parent_id === null || raw.parent_id === undefined ? null : String(raw.parent_id),
    }),
  });
  return withClaimJson(table, TASK_CLAIM_JSON);
}

/**
 * `table`, whose claims send their rows as JSON. For leasehold's own tables, whose column types
 * it knows; `json.fromJson` must build the rows `mapRow` and the lease fields would. @internal
 */
export function withClaimJson<Row>(table: LeasedTable<Row>, json: ClaimJson<Row>): LeasedTable<Row> {
  return Object.freeze({ ...table, claimJson: json });
}
