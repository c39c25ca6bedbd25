import {
  ConfigError,
  parseDuration,
  validateIdentifier,
  withTransaction,
  type Duration,
  type Executor,
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
   * `BEGIN`) to join it; pass a Kysely instance or a `pg` `Pool` to have one opened (and rolled
   * back, record included, when `apply` throws). Never pass a `pg` client outside a
   * transaction: the record would commit on its own.
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
    return opensTransaction(executor) ? withTransaction(executor, run) : run(executor as Executor);
  }
  return Object.freeze({
    schema,
    receive: receive as Inbox['receive'],
    prune: (executor: Executor, { olderThan }: { olderThan: Duration }) =>
      inboxPrune(executor, schema, parseDuration(olderThan, 'olderThan')),
  });
}

// A Kysely instance that is not a transaction, or a pg Pool (the only pg object with totalCount):
// receive opens the transaction. Anything else is taken to be the caller's open transaction.
function opensTransaction(executor: Executor | TransactionSource): executor is TransactionSource {
  const candidate = executor as { isTransaction?: unknown; totalCount?: unknown; connect?: unknown };
  if (typeof candidate.isTransaction === 'boolean') return !candidate.isTransaction;
  return typeof candidate.connect === 'function' && typeof candidate.totalCount === 'number';
}

function checkMessageId(messageId: unknown): void {
  if (typeof messageId !== 'string' || messageId.length === 0 || messageId.length > MAX_ID_LENGTH) {
    throw new ConfigError('messageId', `Expected \`messageId\` to be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  }
}
