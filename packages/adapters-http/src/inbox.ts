import {
  ConfigError,
  parseDuration,
  validateIdentifier,
  withTransaction,
  type Duration,
  type Executor,
  type PgPoolLike,
  type PgQueryable,
  type TransactionSource,
} from '@leasehold/core';
import type { Kysely } from 'kysely';
import { inboxInsert } from './sql/inbox-insert.js';
import { inboxPrune } from './sql/inbox-prune.js';

/** Options of {@link createInbox}. */
export interface InboxOptions {
  /** Schema holding the `inbox` table (see {@link migrateInbox}). @defaultValue 'leasehold' */
  schema?: string;
}

/** What {@link Inbox.receive} did with a message. */
export type ReceiveResult<T> =
  /** First delivery: `apply` ran in the transaction and returned `result`. */
  | { readonly applied: true; readonly result: T }
  /** A redelivery of a message already applied (committed): `apply` did not run. */
  | { readonly applied: false };

/** The receiving side's deduplication: each message id is applied once. */
export interface Inbox {
  /** The validated schema name. */
  readonly schema: string;
  /**
   * Records `messageId` and runs `apply` in the same transaction, only if the id was not
   * recorded before. Pass your open transaction (a Kysely `Transaction`, or a `pg` client after
   * `BEGIN`) to join it; pass a Kysely instance, a `pg` `Pool` or a `pg` client outside a
   * transaction to have one opened (and rolled back, record included, when `apply` throws).
   * An executor whose transaction state cannot be told (pg-native) is refused with a `ConfigError`.
   */
  receive<DB, T>(db: Kysely<DB>, messageId: string, apply: (trx: Kysely<DB>) => Promise<T>): Promise<ReceiveResult<T>>;
  receive<T>(db: PgQueryable, messageId: string, apply: (client: PgQueryable) => Promise<T>): Promise<ReceiveResult<T>>;
  /**
   * Deletes records older than `olderThan`; returns how many. Keep them longer than the
   * sender's whole retry horizon, or a late redelivery is applied again.
   */
  prune(executor: Executor, options: { olderThan: Duration }): Promise<number>;
}

const MAX_ID_LENGTH = 1024;

/**
 * The inbox helper: deduplicates deliveries by message id inside the receiver's own
 * transaction (`INSERT … ON CONFLICT DO NOTHING`, then apply only when inserted), so a
 * redelivered message is applied once — also when two copies arrive at the same time.
 * Works with Kysely and `pg`.
 *
 * @example
 * const inbox = createInbox({ schema: 'app' });
 * const { id } = verifyWebhook(req.headers, rawBody, secrets);
 * const { applied } = await inbox.receive(db, id, async (trx) => {
 *   await trx.insertInto('payment').values(JSON.parse(rawBody).data).execute();
 * });
 * res.writeHead(200).end(applied ? 'applied' : 'duplicate');
 */
export function createInbox(options: InboxOptions = {}): Inbox {
  const schema = validateIdentifier(options.schema ?? 'leasehold', 'schema');
  async function receive<T>(
    executor: Executor | TransactionSource,
    messageId: string,
    apply: (trx: never) => Promise<T>,
  ): Promise<ReceiveResult<T>> {
    checkMessageId(messageId);
    const run = async (trx: Executor): Promise<ReceiveResult<T>> => {
      if (!(await inboxInsert(trx, schema, messageId))) return { applied: false };
      return { applied: true, result: await apply(trx as never) };
    };
    return inReceiverTransaction(executor, run);
  }
  return Object.freeze({
    schema,
    receive: receive as Inbox['receive'],
    prune: (executor: Executor, { olderThan }: { olderThan: Duration }) =>
      inboxPrune(executor, schema, parseDuration(olderThan, 'olderThan')),
  });
}

// A pg Client / PoolClient reports the server's transaction status from its last ReadyForQuery:
// 'I' idle, 'T' in a transaction, 'E' in a failed one; null before its first query or on pg-native.
interface PgClientLike extends PgQueryable {
  getTransactionStatus(): string | null;
}

/**
 * Runs `fn` in the caller's transaction when `executor` is one, else in a new one; refuses an
 * executor whose state it cannot tell, because a record committed on its own would mark the
 * message received even if applying it then failed.
 */
async function inReceiverTransaction<T>(executor: Executor | TransactionSource, fn: (trx: Executor) => Promise<T>): Promise<T> {
  const candidate = executor as Partial<PgClientLike & PgPoolLike> & { isTransaction?: unknown; connectionParameters?: unknown };
  if (typeof candidate.isTransaction === 'boolean') {
    return candidate.isTransaction ? fn(executor as Executor) : withTransaction(executor as TransactionSource, fn);
  }
  if (typeof candidate.getTransactionStatus === 'function') {
    const status = candidate.getTransactionStatus();
    if (status === 'T' || status === 'E') return fn(executor as Executor); // 'E': the insert reports the aborted transaction
    if (status === 'I') return ownTransaction(executor as PgQueryable, fn);
    throw new ConfigError('executor', 'Cannot tell whether this pg client is in a transaction (pg-native, or no query yet): pass a Kysely instance or transaction, or a pg Pool');
  }
  if (candidate.connectionParameters !== undefined) {
    throw new ConfigError('executor', 'A pg Client must report its transaction state (pg >= 8.21); or pass a Kysely instance or transaction, or a pg Pool');
  }
  if (typeof candidate.connect === 'function' && typeof candidate.query === 'function') {
    return withTransaction(executor as PgPoolLike, fn);
  }
  throw new ConfigError('executor', 'Expected a Kysely instance or transaction, a pg Pool, or a pg client');
}

async function ownTransaction<T>(client: PgQueryable, fn: (trx: Executor) => Promise<T>): Promise<T> {
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

function checkMessageId(messageId: unknown): void {
  if (typeof messageId !== 'string' || messageId.length === 0 || messageId.length > MAX_ID_LENGTH) {
    throw new ConfigError('messageId', `Expected \`messageId\` to be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  }
}
