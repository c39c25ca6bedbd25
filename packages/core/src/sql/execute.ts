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

/** The subset of a `pg` client or pool leasehold needs: `query(text, values)` or `query(config)`. */
export interface PgQueryable {
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

// Compiles Kysely `sql` fragments to text + values for plain pg executors; it never connects.
const compiler = new Kysely<Record<string, never>>({
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

/** Runs one statement on either kind of {@link Executor} and returns its rows. */
export async function execute<R>(executor: Executor, query: RawBuilder<R>, options: ExecuteOptions = {}): Promise<R[]> {
  if (isKysely(executor)) {
    const result = await query.execute(executor);
    return result.rows;
  }
  const compiled = query.compile(compiler);
  const values = [...compiled.parameters];
  if (values.length === 0 || options.prepare === false) {
    // no parameters: simple protocol (allows several statements, e.g. migrations); not
    // prepared: an unnamed statement, planned for these very values
    return (await executor.query(compiled.sql, values)).rows as R[];
  }
  // named: pg parses and plans it once per connection, then reuses it
  const name = statementName(compiled.sql);
  const result = await (executor as unknown as PgPreparable).query({ name, text: compiled.sql, values });
  return result.rows as R[];
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
