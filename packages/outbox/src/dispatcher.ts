import {
  ConfigError,
  createLeaseWorker,
  type Duration,
  type LeaseWorker,
  type PgPoolLike,
  type RetentionOptions,
  type WorkerLogger,
} from '@leasehold/core';
import { checkOptionKeys, CORE_MIGRATION_LINE, optionKeys, parseDuration } from '@leasehold/core/internal';
import { ClaimCover } from './claim-cover.js';
import { checkDispatchTiming, unconfirmedStartMs } from './dispatch-timing.js';
import { MIGRATIONS } from './migrate/generated-migrations.js';
import { toOutboxMessage } from './outbox-message.js';
import { outboxTable, type OutboxRow } from './outbox-table.js';
import { LazyPublishContext } from './publish-context.js';
import type { Publisher } from './publisher.js';

/** Options of {@link createDispatcher}. */
export interface DispatcherOptions {
  /**
   * A `pg` pool for claims, heartbeats and finalizes. LISTEN uses a connection of its own, opened
   * with the pool's settings, so a pool of one connection is enough.
   */
  pool: PgPoolLike;
  /** Delivers each message; see {@link Publisher}. */
  publisher: Publisher;
  /** Schema holding the outbox table. @defaultValue 'leasehold' */
  schema?: string;
  /** Recorded as `lease_owner`, for people. @defaultValue `<hostname>:<pid>:<random>` */
  owner?: string;
  /** Most publishes in flight at once. @defaultValue 8 */
  concurrency?: number;
  /**
   * Most messages per claim statement, for experts; `batch × publishTimeout` must be shorter than
   * `lease`. By default the dispatcher sizes its claims and its buffer of claimed messages itself
   * (from the observed publish time); a buffered message that waited longer than its claim's
   * lease covers is published only after a fenced lease extension.
   * @defaultValue sized by the dispatcher
   */
  batch?: number;
  /**
   * Lease per claimed message; one `publishTimeout` (or `batch` of them) must be shorter.
   * @defaultValue '60s'
   */
  lease?: Duration;
  /**
   * Time limit of one publish: then its signal aborts and the attempt counts as a retryable
   * failure. @defaultValue '5s'
   */
  publishTimeout?: Duration;
  /** Poll this often when no notification arrives. @defaultValue '2s' */
  pollInterval?: Duration;
  /** Deliver only these event types (for a dispatcher per destination). @defaultValue all */
  eventTypes?: readonly string[];
  /** Full-jitter backoff bounds for retryable failures. @defaultValue base 1 s, cap 5 min */
  backoff?: { base?: Duration; cap?: Duration };
  /** A deferral that would make a message older than this sends it dead instead. @defaultValue '7d' */
  maxDeferAge?: Duration;
  /** Extend in-flight leases this often. @defaultValue a third of the lease */
  heartbeatInterval?: Duration;
  /**
   * How long `start()` waits for the database to answer its check (it connects, then reads the
   * schema) before it gives up with a `DatabaseNotReadyError` (`unreachable`). Longer on a
   * saturated machine or a slow network, where a healthy database may take more than the default
   * to answer a new connection. @defaultValue '10s'
   */
  startTimeout?: Duration;
  /**
   * Wake on NOTIFY from the outbox's insert trigger. Behind a pooler in transaction mode it needs
   * `listenConnectionString` (see core's `LeaseWorkerOptions.listen`). @defaultValue true; with
   * `noPreparedStatements` and no `listenConnectionString`, false (polls every `pollInterval`)
   */
  listen?: boolean;
  /**
   * The pool reaches PostgreSQL through a pooler in transaction mode (PgBouncer …): no named
   * prepared statements, LISTEN only on `listenConnectionString` (core's
   * `LeaseWorkerOptions.noPreparedStatements`). @defaultValue false
   */
  noPreparedStatements?: boolean;
  /**
   * A connection string that reaches PostgreSQL directly, for the LISTEN connection (core's
   * `LeaseWorkerOptions.listenConnectionString`). @defaultValue the pool's own settings
   */
  listenConnectionString?: string;
  /**
   * Where dead messages, lost leases, dispatcher errors and database outages are logged, besides
   * the events; pino, bunyan and `console` fit as they are. `null` for events only.
   * @defaultValue console
   */
  logger?: WorkerLogger | null;
  /**
   * Deleting delivered messages (and, when asked, dead ones) some time after they ended, in short
   * batches; the dispatchers of a schema take turns at it, one at a time (see core's
   * `RetentionOptions` and docs/operations.md, "Retention"). `false`: this dispatcher takes no
   * turns. @defaultValue delivered messages leave 7 days after delivery, dead ones stay
   */
  retention?: RetentionOptions | false;
}

/**
 * A running outbox dispatcher: core's lease worker on the outbox table. `start()`, `stop({
 * timeout })` and the `task:*` / `worker:*` events are the worker's; each event's `task` is the
 * claimed outbox row.
 */
export type Dispatcher = LeaseWorker<OutboxRow>;

const DISPATCHER_OPTIONS = optionKeys<DispatcherOptions>()(
  'createDispatcher',
  ['pool', 'publisher', 'schema', 'owner', 'concurrency', 'batch', 'lease', 'publishTimeout', 'pollInterval', 'eventTypes', 'backoff', 'maxDeferAge', 'heartbeatInterval', 'startTimeout', 'listen', 'noPreparedStatements', 'listenConnectionString', 'logger', 'retention'],
  { handlerTimeout: 'the dispatcher\'s handler timeout is `publishTimeout`', maxAttempts: 'maxAttempts belongs on createOutbox (or on each event)' },
);

/**
 * Creates a dispatcher that claims outbox messages (ordered ones only at the head of their
 * aggregate), publishes each outside any transaction with a timeout, and finalizes it with the
 * fence: done, retried with backoff, deferred, or dead. Options are checked here, before
 * anything touches the database, including `batch × publishTimeout < lease`.
 *
 * @example
 * const dispatcher = createDispatcher({ pool, publisher, concurrency: 4, publishTimeout: '5s' });
 * dispatcher.on('task:dead', ({ task, error }) => log.error({ id: task.id, error }, 'outbox message dead'));
 * await dispatcher.start();
 * // on shutdown:
 * await dispatcher.stop({ timeout: '10s' });
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  checkOptionKeys(options, DISPATCHER_OPTIONS);
  const publisher = options.publisher;
  if (typeof publisher?.publish !== 'function') {
    throw new ConfigError('publisher', 'Expected `publisher` to have a `publish(message, { signal })` method');
  }
  const concurrency = checkCount(options.concurrency ?? 8, 'concurrency');
  const lease = options.lease ?? '60s';
  const publishTimeout = options.publishTimeout ?? '5s';
  const leaseMs = parseDuration(lease, 'lease');
  const publishTimeoutMs = parseDuration(publishTimeout, 'publishTimeout');
  // one publish must fit in the lease; an expert's batch must fit as a whole (the article's rule)
  const batch = options.batch === undefined ? undefined : checkCount(options.batch, 'batch');
  checkDispatchTiming({ batch: batch ?? 1, publishTimeoutMs, leaseMs });
  // the worker sizes its claims and buffer from the observed publish time, as core's worker
  // does (hundreds for a fast publisher, none for one that takes seconds); what a lease covers
  // is checked per message when it starts instead (see ClaimCover)
  const cover = new ClaimCover(unconfirmedStartMs(publishTimeoutMs, leaseMs));
  const dispatcher = createLeaseWorker<OutboxRow>({
    pool: options.pool,
    table: outboxTable(options.schema),
    // the worker aborts ctx.signal on the publish timeout (handlerTimeout), on shutdown and on
    // a lost lease, and stops waiting for a publisher that ignores it. A message that waited in
    // the buffer past what its claim's lease covers is published only once a fenced extension
    // confirms this dispatcher still holds it: never after its lease may have run out, even
    // with heartbeats failing (the extension then fails, and so does the attempt, unpublished)
    handle: (row, ctx) =>
      cover.covers(row)
        ? publisher.publish(toOutboxMessage(row), new LazyPublishContext(ctx))
        : ctx.extendLease().then(() => publisher.publish(toOutboxMessage(row), new LazyPublishContext(ctx))),
    handlerTimeout: publishTimeout,
    owner: options.owner,
    concurrency,
    batch,
    lease,
    pollInterval: options.pollInterval,
    names: options.eventTypes,
    backoff: options.backoff,
    maxDeferAge: options.maxDeferAge,
    heartbeatInterval: options.heartbeatInterval,
    startTimeout: options.startTimeout,
    listen: options.listen,
    noPreparedStatements: options.noPreparedStatements,
    listenConnectionString: options.listenConnectionString,
    logger: options.logger,
    // on unless turned off: the outbox must not grow without bound by default
    retention: options.retention ?? {},
    // start() refuses a schema whose outbox (or core, whose trigger function it uses) is behind
    migrationLines: [CORE_MIGRATION_LINE, { line: 'outbox', migrations: MIGRATIONS }],
    // with OpenTelemetry: each publish runs in a "dispatch <event type>" span, a child of the
    // trace context outbox.add stored in the event's headers
    telemetry: { operation: 'dispatch', destination: (row) => row.eventType, carrier: (row) => row.headers },
  });
  dispatcher.on('task:claimed', ({ task }) => cover.claimed(task));
  return dispatcher;
}

function checkCount(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 10_000) {
    throw new ConfigError(option, `Expected \`${option}\` to be an integer between 1 and 10000, got ${String(value)}`);
  }
  return value;
}
