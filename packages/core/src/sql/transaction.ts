import type { QueryExecutorProvider } from 'kysely';
import type { Executor, PgQueryable } from './execute.js';

/** A `pg` `Pool`: hands out a client that must be released. */
export interface PgPoolLike extends PgQueryable {
  connect(): Promise<PgQueryable & { release(err?: Error | boolean): void }>;
}

/** A Kysely instance of any database type, as far as opening a transaction goes. */
export interface KyselyTransactionSource {
  transaction(): { execute<T>(callback: (trx: QueryExecutorProvider) => Promise<T>): Promise<T> };
}

/** What can open a transaction: a Kysely instance (`Kysely<YourDB>`) or a `pg` pool. */
export type TransactionSource = KyselyTransactionSource | PgPoolLike;

/** The open transaction handed to the callback of {@link withTransaction}. */
export type TransactionHandle = Executor;

/** Runs `fn` in one transaction on either kind of source; rolls back when it throws. */
export async function withTransaction<T>(
  source: TransactionSource,
  fn: (trx: TransactionHandle) => Promise<T>,
): Promise<T> {
  if ('transaction' in source && typeof source.transaction === 'function') {
    return source.transaction().execute((trx) => fn(trx));
  }
  const client = await (source as PgPoolLike).connect();
  let broken: Error | undefined;
  // a held client whose connection dies emits 'error'; unheard, that would crash the process
  const onError = (error: Error) => (broken = error);
  const emitter = client as unknown as { on?(e: 'error', l: (e: Error) => void): void; off?(e: 'error', l: (e: Error) => void): void };
  emitter.on?.('error', onError);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((e: unknown) => {
      broken = e instanceof Error ? e : new Error(String(e));
    });
    throw error;
  } finally {
    emitter.off?.('error', onError);
    // a client whose connection failed is unusable: destroy it rather than return it to the pool
    client.release(broken ?? false);
  }
}
