import type { QueryExecutorProvider } from 'kysely';
import { ConfigError } from '../errors.js';
import type { Executor, PgQueryable } from './execute.js';
import { asDatabaseNotReady } from '../worker/database-not-ready-error.js';

/** A `pg` `Pool`: hands out a client that must be released. */
export interface PgPoolLike extends PgQueryable {
  /** Checks out a client, which must be released. */
  connect(): Promise<
    PgQueryable & {
      /** Returns the client to the pool; with an error (or `true`), destroys it instead. */
      release(err?: Error | boolean): void;
    }
  >;
}

/** What a `pg` `Pool` exposes to build a client just like its own (`new pool.Client(pool.options)`). */
export interface PgPoolFactory<C = unknown> {
  readonly Client: new (options: object) => C;
  readonly options: object;
}

/**
 * A `pg` `Pool`: it builds its clients itself, and every statement sent through it is its own
 * transaction. A checked-out or single `Client` (which may be inside the caller's BEGIN) and a
 * Kysely instance are not. `C`: the client type the caller builds with it.
 */
export function isPgPool<C = unknown>(executor: object): executor is PgPoolLike & PgPoolFactory<C> {
  const candidate = executor as Partial<PgPoolFactory>;
  return typeof candidate.Client === 'function' && typeof candidate.options === 'object' && candidate.options !== null;
}

/** A Kysely instance of any database type, as far as opening a transaction goes. */
export interface KyselyTransactionSource {
  /** Kysely's transaction builder. */
  transaction(): {
    /** Runs `callback` in a new transaction: commits when it resolves, rolls back when it throws. */
    execute<T>(callback: (trx: QueryExecutorProvider) => Promise<T>): Promise<T>;
  };
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
    // a connect (or BEGIN) that fails never reaches execute: it says what is wrong the same
    // way. What `fn` throws is the caller's, as it threw it: its own statement on a table of its
    // own that is missing is not leasehold's schema missing (leasehold's statements in it are
    // mapped by execute already)
    let entered = false;
    return source
      .transaction()
      .execute((trx) => {
        entered = true;
        return fn(trx);
      })
      .catch((error: unknown) => {
        throw entered ? error : asDatabaseNotReady(error, source);
      });
  }
  const client = await (source as PgPoolLike).connect().catch((error: unknown) => {
    throw asDatabaseNotReady(error, source);
  });
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

// A pg Client / PoolClient reports the server's transaction status from its last ReadyForQuery:
// 'I' idle, 'T' in a transaction, 'E' in a failed one; null before its first query or on pg-native.
interface PgClientLike extends PgQueryable {
  getTransactionStatus(): string | null;
}

/**
 * Runs `fn` in a transaction on `executor`: the caller's own when the executor already is one
 * (a Kysely `Transaction`, a `pg` client after `BEGIN`), otherwise a new one that commits when
 * `fn` returns and rolls back when it throws (a Kysely instance, a `pg` `Pool`, or a `pg` client
 * outside a transaction). Unlike {@link withTransaction}, which always opens its own, this joins.
 *
 * For work that must commit together, such as a lock held until commit and the insert it
 * guards. An executor whose transaction state cannot be told (pg-native, a client that has not
 * run a query yet, a `pg` older than 8.21, a bare `{ query }`) is refused with a `ConfigError`
 * for option `executor`, since running outside a transaction would silently lose the guarantee;
 * `why` is added to that message to say what needs the transaction.
 *
 * @example
 * // joins `trx` when the caller passes one, else opens a transaction of its own
 * await inTransaction(executor, async (trx) => {
 *   await leaseLockGroups(trx, table, ['order:42']);
 *   await insert(trx);
 * }, 'ordered inserts lock their group until commit');
 */
export async function inTransaction<T>(
  executor: Executor | TransactionSource,
  fn: (trx: TransactionHandle) => Promise<T>,
  why?: string,
): Promise<T> {
  const candidate = executor as Partial<PgClientLike & PgPoolLike> & { isTransaction?: unknown; connectionParameters?: unknown };
  const refuse = (problem: string) => new ConfigError('executor', why === undefined ? problem : `${problem} (${why})`);
  if (typeof candidate.isTransaction === 'boolean') {
    // a Kysely instance or transaction
    return candidate.isTransaction ? fn(executor as Executor) : withTransaction(executor as TransactionSource, fn);
  }
  if (typeof candidate.getTransactionStatus === 'function') {
    const status = candidate.getTransactionStatus();
    if (status === 'T' || status === 'E') return fn(executor as Executor); // 'E': the first statement reports the aborted transaction
    if (status === 'I') return ownTransaction(executor as PgQueryable, fn);
    throw refuse('Cannot tell whether this pg client is in a transaction (pg-native, or no query yet): pass a Kysely instance or transaction, or a pg Pool');
  }
  if (candidate.connectionParameters !== undefined) {
    // a pg Client too old to report its transaction status: it must not be mistaken for a pool
    throw refuse('A pg Client must report its transaction state (pg >= 8.21, client.getTransactionStatus()); or pass a Kysely instance or transaction, or a pg Pool');
  }
  if (typeof candidate.connect === 'function' && typeof candidate.query === 'function') {
    return withTransaction(executor as PgPoolLike, fn);
  }
  throw refuse('Expected a Kysely instance or transaction, a pg Pool, or a pg client');
}

async function ownTransaction<T>(client: PgQueryable, fn: (trx: TransactionHandle) => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    // the caller's error is the one to report; a connection too broken to roll back fails its next query anyway
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
