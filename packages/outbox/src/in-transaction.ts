import { ConfigError, withTransaction, type Executor, type PgPoolLike, type PgQueryable } from '@leasehold/core';
import type { QueryExecutorProvider } from 'kysely';

// A pg Client / PoolClient: node-postgres reports the server's transaction status
// ('I' idle, 'T' in a transaction, 'E' in a failed one) from its last ReadyForQuery message.
interface PgClientLike extends PgQueryable {
  getTransactionStatus(): string | null;
}

/**
 * Runs `fn` inside a transaction on `executor`: the caller's own when the executor already is
 * one (a Kysely transaction, a pg client after `BEGIN`), otherwise a new one that commits when
 * `fn` returns. Ordered adds need this: the group lock they take lasts until commit, so lock and
 * insert must share one transaction. @internal
 */
export async function inTransaction<T>(executor: Executor, fn: (trx: Executor) => Promise<T>): Promise<T> {
  if (isKysely(executor)) {
    if ((executor as { isTransaction?: boolean }).isTransaction === true) return fn(executor);
    const source = executor as Partial<{ transaction(): { execute<R>(cb: (trx: Executor) => Promise<R>): Promise<R> } }>;
    if (typeof source.transaction === 'function') return source.transaction().execute(fn);
  } else if (isPgClient(executor)) {
    const status = executor.getTransactionStatus();
    if (status === 'I') return ownTransaction(executor, fn);
    if (status === 'T' || status === 'E') return fn(executor); // 'E': the insert reports the aborted transaction
    // null: pg-native, or a client that never ran a query; a lock outside a transaction would
    // end with its own statement, so refuse rather than silently lose the ordering
    throw new ConfigError('executor', 'Cannot tell whether this pg client is in a transaction (pg-native?): pass a Kysely transaction or a pg Pool');
  } else if ('connectionParameters' in executor) {
    // a pg Client too old to report its transaction status: it must not be mistaken for a pool
    throw new ConfigError(
      'executor',
      'Ordered events through a pg Client need pg >= 8.21 (client.getTransactionStatus()); or pass a Kysely transaction or a pg Pool',
    );
  } else if (typeof (executor as Partial<PgPoolLike>).connect === 'function') {
    return withTransaction(executor as PgPoolLike, (trx) => fn(trx as Executor));
  }
  throw new ConfigError(
    'executor',
    'Ordered events need a transaction: pass a Kysely instance or transaction, a pg Pool, or a pg Client',
  );
}

function isKysely(executor: Executor): executor is QueryExecutorProvider {
  return typeof (executor as Partial<QueryExecutorProvider>).getExecutor === 'function';
}

function isPgClient(executor: Executor): executor is PgClientLike {
  return typeof (executor as Partial<PgClientLike>).getTransactionStatus === 'function';
}

async function ownTransaction<T>(client: PgQueryable, fn: (trx: Executor) => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    // the original error is the one to report; a connection too broken to roll back fails
    // the caller's next query on it anyway
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
