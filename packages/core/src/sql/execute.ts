import { createHash } from 'node:crypto';
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryExecutorProvider,
  type RawBuilder,
} from 'kysely';
import { ConfigError } from '../leasehold-error.js';
import { asDatabaseNotReady } from '../worker/database-not-ready-error.js';
import { isPgPool } from './transaction.js';

/** The subset of a `pg` client or pool leasehold needs: `query(text, values)` or `query(config)`. */
export interface PgQueryable {
  /** Runs one statement with `$1…` parameters. */
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** A `pg` executor that also takes a query config, so statements can be prepared once per connection. */
interface PgPreparable {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/**
 * Where a statement runs: a Kysely instance or transaction, or a `pg` `Pool`, `PoolClient` or
 * `Client`. Passing the application's transaction makes the statement part of it.
 */
export type Executor = QueryExecutorProvider | PgQueryable;

/** Compiles Kysely `sql` fragments to text + values for plain pg executors; it never connects. @internal */
export const compiler = new Kysely<Record<string, never>>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

function isKysely(executor: Executor): executor is QueryExecutorProvider {
  return typeof (executor as Partial<QueryExecutorProvider>).getExecutor === 'function';
}

/** How {@link execute} sends a statement to a `pg` executor. */
export interface ExecuteOptions {
  /**
   * Prepare it once per connection (a named statement) and reuse it. Turn it off for a
   * statement whose best plan depends on how many rows its arrays hold (`UPDATE … FROM
   * unnest($1) …`): after five runs PostgreSQL may switch a named statement to a generic plan,
   * which estimates every `unnest` at 10 rows and can then scan every processing row per item
   * (the no-op bench fell from thousands of jobs/s to hundreds with a 500-task buffer).
   * @defaultValue true
   */
  readonly prepare?: boolean;
}

/**
 * Runs one statement on either kind of {@link Executor} and returns its rows. A missing table,
 * schema, database or login, or a server out of reach, rejects with a `DatabaseNotReadyError`
 * (the driver's error its `cause`), whichever public call sent the statement.
 */
export async function execute<R>(executor: Executor, query: RawBuilder<R>, options: ExecuteOptions = {}): Promise<R[]> {
  // one try around the body, not a wrapper call: a statement that succeeds costs no extra promise
  try {
    if (isKysely(executor)) {
      const result = await query.execute(executor);
      return result.rows;
    }
    const compiled = query.compile(compiler);
    const values = [...compiled.parameters];
    if (values.length === 0 || options.prepare === false || (anyUnprepared && unprepared.has(executor))) {
      // no parameters: simple protocol (allows several statements, e.g. migrations); not
      // prepared: an unnamed statement, planned for these very values
      return (await executor.query(compiled.sql, values)).rows as R[];
    }
    // named: pg parses and plans it once per connection, then reuses it
    const name = statementName(compiled.sql);
    const result = await (executor as unknown as PgPreparable).query({ name, text: compiled.sql, values });
    return result.rows as R[];
  } catch (error) {
    throw asDatabaseNotReady(error, executor);
  }
}

/**
 * Stands for one value while a statement is compiled once by {@link executeCached}; replaced by
 * the value of the same key at each run.
 */
class Slot {
  constructor(readonly key: string) {}
}

interface Template {
  readonly sql: string;
  /** Per parameter: the key of its value, or a constant the template itself carried. */
  readonly params: readonly (Slot | { readonly constant: unknown })[];
}

const templates = new Map<string, Template>();

/**
 * {@link execute} for a statement on a hot path whose text depends only on `key`: on a `pg`
 * executor, `build` runs once per key (with a stand-in per value) and later calls send the text
 * compiled then with this call's `values`, in the same order. So `build` must only interpolate
 * values, never inspect them; what shapes the text belongs in `key`. A Kysely executor gets the
 * statement built with the values, as {@link execute} would. Compiling the claim through Kysely
 * took some 30 µs per call, all of it on the path from a notification to a handler's start.
 */
export async function executeCached<R, V extends Record<string, unknown>>(
  executor: Executor,
  key: string,
  build: (values: V) => RawBuilder<R>,
  values: V,
  options: ExecuteOptions = {},
): Promise<R[]> {
  if (isKysely(executor)) return execute(executor, build(values), options);
  try {
    let template = templates.get(key);
    if (template === undefined) {
      const stand = Object.fromEntries(Object.keys(values).map((k) => [k, new Slot(k)])) as unknown as V;
      const compiled = build(stand).compile(compiler);
      template = { sql: compiled.sql, params: compiled.parameters.map((p) => (p instanceof Slot ? p : { constant: p })) };
      if (templates.size < 1_000) templates.set(key, template);
    }
    const params = template.params.map((p) => (p instanceof Slot ? values[p.key] : p.constant));
    if (params.length === 0 || options.prepare === false || (anyUnprepared && unprepared.has(executor))) return (await executor.query(template.sql, params)).rows as R[];
    const result = await (executor as unknown as PgPreparable).query({ name: statementName(template.sql), text: template.sql, values: params });
    return result.rows as R[];
  } catch (error) {
    throw asDatabaseNotReady(error, executor);
  }
}

/**
 * Pools and clients whose statements must not be named (see {@link noPreparedStatements}).
 * `anyUnprepared` keeps the default path to one test of a boolean.
 */
const unprepared = new WeakSet<object>();
let anyUnprepared = false;

/** A `pg` pool as far as handing out clients goes: it says when it hands one out. */
interface AcquireEmitter {
  on(event: 'acquire', listener: (client: object) => void): unknown;
}

/**
 * Marks a `pg` `Pool` (or `Client`) that reaches PostgreSQL through a pooler in transaction mode
 * (PgBouncer, Supavisor, RDS Proxy …): every leasehold statement sent through it, or through a
 * client it hands out from now on, is an unnamed statement (parsed and planned each time), never
 * a named prepared statement, which a pooler would send to whichever server connection is free
 * (`prepared statement "leasehold_…" does not exist`). Returns its argument. For the pool given
 * to `enqueue`, `migrate`, `sendSignal`… in a process that runs no worker; the worker, the
 * dispatcher, the scheduler, `waitForResult` and the dashboard mark their pool themselves when
 * given `noPreparedStatements: true`. A Kysely instance never prepares statements: nothing to mark.
 *
 * @example
 * const pool = noPreparedStatements(new pg.Pool({ connectionString: process.env.PGBOUNCER_URL }));
 * await enqueue(pool, sendWelcome, { userId, email });
 */
export function noPreparedStatements<E extends object>(executor: E): E {
  if (typeof executor !== 'object' || executor === null) throw new ConfigError('executor', 'Expected a pg Pool or Client');
  if (unprepared.has(executor)) return executor;
  unprepared.add(executor);
  anyUnprepared = true;
  // a client the pool hands out runs the application's transaction (withTransaction, dbStep)
  const pool = executor as Partial<AcquireEmitter>;
  if (isPgPool(executor) && typeof pool.on === 'function') pool.on('acquire', (client) => unprepared.add(client));
  return executor;
}

/** Whether {@link noPreparedStatements} marked this executor. @internal */
export function isUnprepared(executor: object): boolean {
  return anyUnprepared && unprepared.has(executor);
}

const names = new Map<string, string>();

function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `leasehold_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    if (names.size < 1_000) names.set(text, name);
  }
  return name;
}
