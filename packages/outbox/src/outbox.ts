import {
  ConfigError,
  inTransaction,
  leaseStats,
  type DeadResolution,
  type Executor,
  type LeasedTable,
  type JsonTypeCheck,
} from '@leasehold/core';
import { checkOptionKeys, leaseLockGroups, leaseSettleGroups, currentTraceHeaders, optionKeys } from '@leasehold/core/internal';
import { checkEvent, checkMaxAttempts, type OutboxEvent } from './event.js';
import {
  listDead,
  purgeDone,
  retryDead,
  skipDead,
  type DeadListOptions,
  type DeadMessage,
  type OutboxStats,
  type PurgeDoneOptions,
  type PurgeDoneResult,
} from './operations.js';
import { outboxTable, type OutboxRow } from './outbox-table.js';
import { outboxInsertMany, type OutboxInsert } from './sql/outbox-insert-many.js';

/** Options of {@link createOutbox}. */
export interface OutboxOptions {
  /** Schema holding the outbox table (see `migrate`). @defaultValue 'leasehold' */
  schema?: string;
  /**
   * Event types delivered in order per aggregate: such a message is dispatched only after every
   * earlier ordered message of its aggregate is done, and a dead one blocks the aggregate until
   * `retryDead` / `skipDead`. Other event types are dispatched in parallel. @defaultValue []
   */
  orderedEventTypes?: readonly string[];
  /** Instead of `orderedEventTypes`: decides per event whether it is ordered. */
  ordered?: (eventType: string, aggregateType: string) => boolean;
  /** Delivery attempts before a message goes dead (a crash counts as one). @defaultValue 12 */
  maxAttempts?: number;
}

/** The producer side and the operations of one outbox table. Every method takes the executor first. */
export interface Outbox {
  /** The table, for core's primitives (`claim(pool, { table })`) and custom queries. */
  readonly table: LeasedTable<OutboxRow>;
  /**
   * Records one event in the caller's transaction and returns its id. Pass the transaction the
   * business change runs in (a Kysely transaction or a pg client after `BEGIN`): a rollback
   * leaves no message, a commit makes it deliverable. An ordered event first takes its
   * aggregate's lock until commit, so ids follow commit order inside an aggregate; given a
   * pool or a Kysely instance, lock and insert get a transaction of their own.
   * Throws `ConfigError` naming the invalid field.
   */
  add<P>(executor: Executor, event: OutboxEvent<P> & JsonTypeCheck<NoInfer<P>, 'payload'>): Promise<string>;
  /** Like `add` for many events in one statement; ids in input order. */
  addMany<E extends OutboxEvent<unknown>>(executor: Executor, events: readonly (E & JsonTypeCheck<NoInfer<E>['payload'], 'payload'>)[]): Promise<string[]>;
  /** Counts by status, oldest undelivered age, expired leases, attempts histogram. */
  stats(executor: Executor): Promise<OutboxStats>;
  /** Dead messages by id, a page at a time. */
  dead(executor: Executor, options?: DeadListOptions): Promise<DeadMessage[]>;
  /** Dead → pending now, attempts reset, `reason` recorded. Reports ids it could not change. */
  retryDead(executor: Executor, ids: readonly string[], reason: string): Promise<DeadResolution>;
  /** Dead → done without delivery, `reason` recorded; unblocks an ordered aggregate. */
  skipDead(executor: Executor, ids: readonly string[], reason: string): Promise<DeadResolution>;
  /** Deletes delivered messages older than `olderThan` in bounded batches. */
  purgeDone(executor: Executor, options: PurgeDoneOptions): Promise<PurgeDoneResult>;
}

const OUTBOX_OPTIONS = optionKeys<OutboxOptions>()('createOutbox', ['schema', 'orderedEventTypes', 'ordered', 'maxAttempts'], {
  publisher: 'the publisher belongs on createDispatcher',
  pool: 'createOutbox takes no pool: each call takes the executor first',
});

/**
 * Creates the producer side and the operations of an outbox. Options are checked here, before
 * anything touches the database.
 *
 * @example
 * const outbox = createOutbox({ orderedEventTypes: ['OrderCreated', 'OrderPaid'] });
 * await db.transaction().execute(async (trx) => {
 *   await trx.updateTable('orders').set({ status: 'paid' }).where('id', '=', orderId).execute();
 *   await outbox.add(trx, { aggregateType: 'order', aggregateId: orderId, eventType: 'OrderPaid', payload: { orderId } });
 * });
 */
export function createOutbox(options: OutboxOptions = {}): Outbox {
  checkOptionKeys(options, OUTBOX_OPTIONS);
  const table = outboxTable(options.schema);
  const isOrdered = orderedPredicate(options);
  const maxAttempts = checkMaxAttempts(options.maxAttempts ?? 12, 'maxAttempts');

  const toInsert = (event: unknown, at: string): OutboxInsert => {
    const e = checkEvent(event, at);
    const ordered = isOrdered(e.eventType, e.aggregateType);
    return {
      ...e,
      groupKey: ordered ? `${e.aggregateType}:${e.aggregateId}` : null,
      maxAttempts: e.maxAttempts ?? maxAttempts,
    };
  };

  const insert = async (executor: Executor, rows: OutboxInsert[]): Promise<string[]> => {
    const groups = rows.flatMap((r) => (r.groupKey === null ? [] : [r.groupKey]));
    // unordered rows need no lock: the one INSERT statement is atomic by itself
    if (groups.length === 0) return outboxInsertMany(executor, table, rows);
    return inTransaction(executor, async (trx) => {
      await leaseLockGroups(trx, table, groups);
      const ids = await outboxInsertMany(trx, table, rows);
      // ids come sorted: the first is the lowest this transaction inserted
      await leaseSettleGroups(trx, table, groups, { insertedFrom: ids[0] });
      return ids;
    }, 'ordered events lock their aggregate until commit');
  };

  return Object.freeze({
    table,
    async add(executor: Executor, event: OutboxEvent<unknown>) {
      const trace = await currentTraceHeaders();
      const [id] = await insert(executor, [toInsert(withTrace(event, trace), 'event')]);
      return id!;
    },
    async addMany(executor: Executor, events: readonly OutboxEvent<unknown>[]) {
      if (!Array.isArray(events)) throw new ConfigError('events', 'Expected `events` to be an array');
      const trace = await currentTraceHeaders();
      return insert(executor, events.map((e, i) => toInsert(withTrace(e, trace), `events[${i}]`)));
    },
    stats: (executor: Executor) => leaseStats(executor, table),
    dead: (executor: Executor, o?: DeadListOptions) => listDead(executor, table, o),
    retryDead: (executor: Executor, ids: readonly string[], reason: string) => retryDead(executor, table, ids, reason),
    skipDead: (executor: Executor, ids: readonly string[], reason: string) => skipDead(executor, table, ids, reason),
    purgeDone: (executor: Executor, o: PurgeDoneOptions) => purgeDone(executor, table, o),
  });
}

/**
 * The event with the producer's trace context (`traceparent`, `tracestate`) among its headers,
 * so the dispatcher's span and the receiver continue the trace; headers the event gives itself
 * win. Anything but a plain object is left for `checkEvent` to refuse.
 */
function withTrace(event: unknown, trace: Readonly<Record<string, string>>): unknown {
  if (Object.keys(trace).length === 0 || typeof event !== 'object' || event === null) return event;
  const headers = (event as { headers?: unknown }).headers;
  if (headers !== undefined && (typeof headers !== 'object' || headers === null || Array.isArray(headers))) return event;
  return { ...event, headers: { ...trace, ...(headers as Record<string, string> | undefined) } };
}

function orderedPredicate(options: OutboxOptions): (eventType: string, aggregateType: string) => boolean {
  if (options.ordered !== undefined && options.orderedEventTypes !== undefined) {
    throw new ConfigError('ordered', 'Give either `ordered` or `orderedEventTypes`, not both');
  }
  if (options.ordered !== undefined) {
    if (typeof options.ordered !== 'function') {
      throw new ConfigError('ordered', 'Expected `ordered` to be a function (eventType, aggregateType) => boolean');
    }
    return options.ordered;
  }
  const types = options.orderedEventTypes ?? [];
  if (!Array.isArray(types) || types.some((t) => typeof t !== 'string' || t === '')) {
    throw new ConfigError('orderedEventTypes', 'Expected `orderedEventTypes` to be an array of event type names');
  }
  const set = new Set<string>(types);
  return (eventType) => set.has(eventType);
}
