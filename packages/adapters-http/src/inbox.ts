import {
  INTEGER_RANGES,
  inTransaction,
  type Duration,
  type Executor,
  type PgQueryable,
  type TransactionSource,
} from '@leasehold/core';
import { checkInteger, checkKey, checkOptionKeys, optionKeys, parseDuration, validateIdentifier, withSpan } from '@leasehold/core/internal';
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

/** Options of one {@link Inbox.receive}. */
export interface ReceiveOptions {
  /**
   * The delivery's headers (e.g. node:http's `req.headers`). With OpenTelemetry installed, the
   * receive runs in a `consumer` span whose parent is the sender's `traceparent`, so the trace
   * goes on from the producer through the outbox to here; `apply`'s own spans are its children.
   */
  readonly headers?: Readonly<Record<string, string | readonly string[] | undefined>>;
}

/** Options of {@link Inbox.prune}. */
export interface InboxPruneOptions {
  /** Delete records received longer ago than this (ms or e.g. `'30d'`). */
  olderThan: Duration;
  /** Records per DELETE statement; each statement locks at most this many. @defaultValue 1000 */
  batchSize?: number;
  /** Stops between batches when aborted; the records deleted so far stay deleted. */
  signal?: AbortSignal;
}

/** The receiving side's deduplication: each message id is applied once. */
export interface Inbox {
  /** The validated schema name. */
  readonly schema: string;
  /**
   * Records `messageId` and runs `apply` in the same transaction, only if the id was not
   * recorded before. Pass your open transaction (a Kysely `Transaction`, or a `pg` client after
   * `BEGIN`) to join it; pass a Kysely instance, a `pg` `Pool` or a `pg` client outside a
   * transaction to have one opened (and rolled back, record included, when `apply` throws).
   * An executor whose transaction state cannot be told (pg-native) is refused with a `ConfigError`,
   * and so is a `messageId` that is not a key (non-empty text of at most
   * `INPUT_LIMITS.keyBytes` bytes, without NUL or lone surrogates), before any SQL runs.
   */
  receive<DB, T>(db: Kysely<DB>, messageId: string, apply: (trx: Kysely<DB>) => Promise<T>, options?: ReceiveOptions): Promise<ReceiveResult<T>>;
  /**
   * The same with `pg`: a `Pool` or a client outside a transaction has one opened; a client after
   * `BEGIN` joins it. `apply` gets the client the transaction runs on.
   */
  receive<T>(db: PgQueryable, messageId: string, apply: (client: PgQueryable) => Promise<T>, options?: ReceiveOptions): Promise<ReceiveResult<T>>;
  /**
   * Deletes records older than `olderThan`, oldest first, in statements of at most `batchSize`
   * records each; returns how many. Keep them longer than the sender's whole retry horizon, or a
   * late redelivery is applied again.
   */
  prune(executor: Executor, options: InboxPruneOptions): Promise<number>;
}

const INBOX_OPTIONS = optionKeys<InboxOptions>()('createInbox', ['schema']);
const RECEIVE_OPTIONS = optionKeys<ReceiveOptions>()('inbox.receive', ['headers']);
const PRUNE_OPTIONS = optionKeys<InboxPruneOptions>()('inbox.prune', ['olderThan', 'batchSize', 'signal']);

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
  checkOptionKeys(options, INBOX_OPTIONS);
  const schema = validateIdentifier(options.schema ?? 'leasehold', 'schema');
  async function receive<T>(
    executor: Executor | TransactionSource,
    messageId: string,
    apply: (trx: never) => Promise<T>,
    receiveOptions: ReceiveOptions = {},
  ): Promise<ReceiveResult<T>> {
    // a key like any other: NUL would fail the caller's transaction, and a lone surrogate
    // would be stored as U+FFFD, so two different messages could share one record
    checkKey(messageId, 'messageId');
    checkOptionKeys(receiveOptions, RECEIVE_OPTIONS);
    const run = async (trx: Executor): Promise<ReceiveResult<T>> => {
      if (!(await inboxInsert(trx, schema, messageId))) return { applied: false };
      return { applied: true, result: await apply(trx as never) };
    };
    const attributes = { 'messaging.operation.type': 'process', 'messaging.message.id': messageId };
    return withSpan('inbox receive', { kind: 'consumer', attributes, parentHeaders: receiveOptions.headers }, async (span) => {
      // joins the caller's transaction, else opens one; an executor whose state cannot be told is
      // refused, because a record committed on its own would mark the message received even if
      // apply then failed
      const result = await inTransaction(executor, run, 'the inbox record must commit together with what apply writes');
      span.setAttributes({ 'leasehold.inbox.applied': result.applied });
      return result;
    });
  }
  return Object.freeze({
    schema,
    receive: receive as Inbox['receive'],
    prune: (executor: Executor, pruneOptions: InboxPruneOptions) => prune(executor, schema, pruneOptions),
  });
}

async function prune(executor: Executor, schema: string, options: InboxPruneOptions): Promise<number> {
  checkOptionKeys(options, PRUNE_OPTIONS);
  const olderThanMs = parseDuration(options?.olderThan, 'olderThan');
  const batchSize = checkInteger(options.batchSize ?? 1_000, 'batchSize', INTEGER_RANGES.purgeBatchSize);
  let deleted = 0;
  // one short statement per batch, so no lock outlives a batch (with a pool executor)
  while (!options.signal?.aborted) {
    const n = await inboxPrune(executor, schema, olderThanMs, batchSize);
    deleted += n;
    if (n < batchSize) break;
  }
  return deleted;
}
