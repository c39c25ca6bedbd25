import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryExecutorProvider,
  type RawBuilder,
} from 'kysely';

/** The subset of a `pg` client or pool leasehold needs: `query(text, values)`. */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
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

/** Runs one statement on either kind of {@link Executor} and returns its rows. */
export async function execute<R>(executor: Executor, query: RawBuilder<R>): Promise<R[]> {
  if (isKysely(executor)) {
    const result = await query.execute(executor);
    return result.rows;
  }
  const compiled = query.compile(compiler);
  const result = await executor.query(compiled.sql, [...compiled.parameters]);
  return result.rows as R[];
}
