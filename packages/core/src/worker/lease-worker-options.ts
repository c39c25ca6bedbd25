import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { parseDuration, parseInteger, type Duration } from '../duration.js';
import { ConfigError } from '../errors.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import type { LeasedTable } from '../leased-table.js';
import type { MigrationLine } from '../migrate/migrator.js';
import { checkOwner } from '../primitives.js';
import type { Claimed } from '../sql/lease-row.js';
import { retentionSettings, type RetentionOptions, type RetentionSettings } from '../retention/retention-options.js';
import type { LimitDeclaration } from '../sql/limit-register-many.js';
import { versionKey, type ClaimVersions } from '../sql/claim-versions.js';
import type { TelemetryNaming } from '../telemetry/worker-telemetry.js';
import type { PgPoolLike } from '../sql/transaction.js';
import { AUTO_PREFETCH_MAX } from './claim-sizing.js';
import type { HandlerContext } from './handler-context.js';
import { poolerSettings, type PoolerOptions } from './pooler-settings.js';
import { runSettings, type RunOptions, type RunSettings } from './settings.js';
import type { WorkerLogger } from './worker-log.js';

export type { WorkerLogger } from './worker-log.js';

/** Options of {@link createLeaseWorker}. */
export interface LeaseWorkerOptions<Row> extends RunOptions, PoolerOptions {
  /**
   * A `pg` pool for the worker's statements. LISTEN uses a connection of its own, opened with the
   * pool's settings (`new pool.Client(pool.options)`), so a pool of one connection is enough.
   */
  pool: PgPoolLike;
  /** The table to work on (core's `taskTable(schema)`, the outbox, …). */
  table: LeasedTable<Row>;
  /** Runs one claimed row; what it throws (or its promise rejects with) decides the outcome. */
  handle: (task: Claimed<Row>, ctx: HandlerContext) => Promise<void> | void;
  /**
   * What a handler's return value (or its promise's) stores with the row's `done`, as JSON
   * text, or null for nothing; a throw fails the run as a throw of the handler would.
   * `createWorker` passes its typed tasks' rule. @defaultValue none: nothing is stored
   * @internal for leasehold's own packages
   */
  result?: (value: unknown, task: Claimed<Row>) => string | null;
  /** Recorded as `lease_owner`. @defaultValue `<hostname>:<pid>:<random>` */
  owner?: string;
  /** Most handlers running their code at once (a workflow run resumed after a park lends its slot while it waits for its own record: docs/worker-lifecycle.md). @defaultValue 8 */
  concurrency?: number;
  /**
   * Most rows per claim statement. For experts: left out, the worker sizes its claims itself
   * (powers of two up to 1,024, as many as its slots and buffer have room for).
   * @defaultValue sized by the worker
   */
  batch?: number;
  /**
   * Claimed tasks kept ready beyond the running ones, so a freed slot starts its next task
   * without waiting for a claim round trip. Their leases run (and are renewed) while they wait,
   * and a crash costs them an attempt. For experts: left out, the worker keeps as many as its
   * slots start within 100 ms (and within half a heartbeat interval) at the handlers' observed
   * duration, up to `maxPrefetch`: a couple of thousand for handlers that take microseconds, none for
   * handlers that take seconds. 0 claims only for free slots.
   * @defaultValue sized by the worker
   */
  prefetch?: number;
  /**
   * Most tasks the worker's own sizing keeps ready beyond the running ones (ignored when
   * `prefetch` is given). @defaultValue 2048
   */
  maxPrefetch?: number;
  /** Poll this often when no notification arrives. @defaultValue '2s' */
  pollInterval?: Duration;
  /** Extend in-flight leases this often. @defaultValue a third of the shortest lease */
  heartbeatInterval?: Duration;
  /**
   * How long `start()` waits for the database to answer its check (it connects, then reads the
   * schema) before it gives up with a `DatabaseNotReadyError` (`unreachable`). Longer on a
   * saturated machine or a slow network, where a healthy database may take more than the default
   * to answer a new connection. @defaultValue '10s'
   */
  startTimeout?: Duration;
  /** Claim only rows with these names. @defaultValue all */
  names?: readonly string[];
  /**
   * Per name, the versions of rows this worker runs (core's task table, `defineTask`'s
   * `version` and `accepts`); rows of other versions are left to workers that run them.
   * Requires `names`, and a table with a `version` column. @defaultValue every version
   */
  versions?: ReadonlyMap<string, readonly number[]>;
  /** Run settings per row, where they differ from the worker's own. */
  settingsFor?: (task: Claimed<Row>) => RunSettings;
  /** Lease per name for the claim statement (what `settingsFor` returns for that name). */
  leaseMsByName?: ReadonlyMap<string, number>;
  /**
   * Where the worker logs, besides its events: a dead task and a worker error (error), a lost
   * lease, an abandoned stop and the start of a database outage (warn), the outage's end (info),
   * retries (debug). pino, bunyan and `console` fit as they are (see {@link WorkerLogger});
   * `null` for events only. @defaultValue console
   */
  logger?: WorkerLogger | null;
  /**
   * Migration lines the table needs: `start()` refuses a schema where one is not applied up to
   * its last migration. `createWorker` and the outbox dispatcher pass their own. @defaultValue none
   * (`start()` then checks only that the table exists)
   * @internal for leasehold's own packages: a line comes from `@leasehold/core/internal`
   */
  migrationLines?: readonly MigrationLine[];
  /**
   * The limits (`defineLimit`) this worker's rows run under, with the names that run under each:
   * recorded at `start()` (a bound changed in code applies from then on, to every worker), and
   * claimed within. Only for a table with limits (`LeasedTable.limitTable`). `createWorker` passes
   * its tasks'. @defaultValue none (rows under a limit recorded for one of `names` are still
   * claimed within it)
   */
  limits?: readonly LimitDeclaration[];
  /**
   * Deleting the table's old finished rows (see {@link RetentionOptions}): this worker takes its
   * turns at it, one worker of all at a time; `false` or left out, it never does. `createWorker`
   * and the outbox dispatcher turn it on unless told otherwise.
   * @defaultValue off
   */
  retention?: RetentionOptions | false;
  /**
   * How the worker's OpenTelemetry spans and metrics name its rows, when an SDK is registered
   * (see docs/observability.md). `createWorker` and the outbox dispatcher pass their own.
   * @defaultValue operation `process`, destination the table's name, no stored trace context
   */
  telemetry?: TelemetryNaming<Row>;
}

/** Checked, frozen options. @internal */
export interface NormalizedLeaseWorkerOptions<Row> {
  readonly pool: PgPoolLike;
  readonly table: LeasedTable<Row>;
  readonly handle: LeaseWorkerOptions<Row>['handle'];
  readonly result: LeaseWorkerOptions<Row>['result'];
  readonly owner: string;
  readonly concurrency: number;
  /** Undefined: sized by the worker (see `ClaimSizing`). */
  readonly batch: number | undefined;
  /** Undefined: sized by the worker. */
  readonly prefetch: number | undefined;
  readonly maxPrefetch: number;
  readonly pollIntervalMs: number;
  readonly heartbeatIntervalMs: number;
  readonly startTimeoutMs: number;
  readonly names: readonly string[] | undefined;
  readonly versions: ClaimVersions | undefined;
  readonly settings: RunSettings;
  readonly settingsFor: (task: Claimed<Row>) => RunSettings;
  readonly leaseMsByName: ReadonlyMap<string, number> | undefined;
  readonly listen: boolean;
  /** Behind a pooler in transaction mode: no named statements, LISTEN only on a direct connection. */
  readonly pooled: boolean;
  readonly listenConnectionString: string | undefined;
  readonly logger: WorkerLogger | null;
  readonly migrationLines: readonly MigrationLine[];
  readonly limits: readonly LimitDeclaration[];
  /** Undefined: this worker takes no retention turns. */
  readonly retention: RetentionSettings | undefined;
  readonly telemetry: TelemetryNaming<Row>;
}

// every key of LeaseWorkerOptions: createWorker passes its own (table, names, versions…) through here too
const LEASE_WORKER_OPTIONS = optionKeys<LeaseWorkerOptions<unknown>>()('createLeaseWorker', [
  'pool', 'table', 'handle', 'result', 'owner', 'concurrency', 'batch', 'prefetch', 'maxPrefetch', 'pollInterval', 'heartbeatInterval', 'startTimeout',
  'names', 'versions', 'settingsFor', 'leaseMsByName', 'logger', 'migrationLines', 'limits', 'retention', 'telemetry',
  'lease', 'handlerTimeout', 'backoff', 'maxDeferAge', 'listen', 'noPreparedStatements', 'listenConnectionString',
]);

/** Validates every option before anything touches the database. @internal */
export function normalizeLeaseWorkerOptions<Row>(options: LeaseWorkerOptions<Row>): NormalizedLeaseWorkerOptions<Row> {
  checkOptionKeys(options, LEASE_WORKER_OPTIONS);
  if (typeof options.pool?.connect !== 'function' || typeof options.pool.query !== 'function') {
    throw new ConfigError('pool', 'Expected `pool` to be a pg Pool');
  }
  if (typeof options.handle !== 'function') throw new ConfigError('handle', 'Expected `handle` to be a function');
  const owner = checkOwner(options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`);
  const concurrency = parseInteger(options.concurrency ?? 8, 'concurrency', 1, 10_000);
  const batch = options.batch === undefined ? undefined : parseInteger(options.batch, 'batch', 1, 10_000);
  const prefetch = options.prefetch === undefined ? undefined : parseInteger(options.prefetch, 'prefetch', 0, 10_000);
  const maxPrefetch = parseInteger(options.maxPrefetch ?? AUTO_PREFETCH_MAX, 'maxPrefetch', 0, 10_000);
  const pollIntervalMs = parseDuration(options.pollInterval ?? '2s', 'pollInterval');
  const settings = runSettings(options);
  const leases = [settings.leaseMs, ...(options.leaseMsByName?.values() ?? [])];
  const heartbeatIntervalMs =
    options.heartbeatInterval === undefined
      ? Math.max(10, Math.floor(Math.min(...leases) / 3))
      : parseDuration(options.heartbeatInterval, 'heartbeatInterval');
  if (heartbeatIntervalMs >= Math.min(...leases)) {
    throw new ConfigError('heartbeatInterval', 'Expected `heartbeatInterval` to be shorter than the shortest lease');
  }
  const startTimeoutMs = parseDuration(options.startTimeout ?? '10s', 'startTimeout');
  const names = options.names === undefined ? undefined : Object.freeze([...options.names]);
  if (names?.length === 0) throw new ConfigError('names', 'Expected `names` to list at least one name');
  return Object.freeze({
    pool: options.pool,
    table: options.table,
    handle: options.handle,
    result: options.result,
    owner,
    concurrency,
    batch,
    prefetch,
    maxPrefetch,
    pollIntervalMs,
    heartbeatIntervalMs,
    startTimeoutMs,
    names,
    versions: claimVersions(options.versions, names),
    settings,
    settingsFor: options.settingsFor ?? (() => settings),
    leaseMsByName: options.leaseMsByName,
    ...poolerSettings(options),
    logger: checkLogger(options.logger),
    migrationLines: Object.freeze([...(options.migrationLines ?? [])]),
    limits: checkLimits(options),
    retention: options.retention === undefined ? undefined : retentionSettings(options.retention),
    telemetry: options.telemetry ?? { operation: 'process', destination: () => options.table.table },
  });
}

function claimVersions(versions: ReadonlyMap<string, readonly number[]> | undefined, names: readonly string[] | undefined): ClaimVersions | undefined {
  if (versions === undefined) return undefined;
  if (names === undefined) throw new ConfigError('versions', 'Expected `names` with `versions`: versions are given per name');
  const byName = Object.freeze(Object.fromEntries(names.map((name) => [name, Object.freeze([...(versions.get(name) ?? [1])])])));
  const keys = names.flatMap((name) => byName[name]!.map((v) => versionKey(name, v)));
  return Object.freeze({ firstOnly: names.every((name) => byName[name]!.length === 1 && byName[name]![0] === 1), keys: Object.freeze(keys), byName });
}

function checkLimits<Row>(options: LeaseWorkerOptions<Row>): readonly LimitDeclaration[] {
  const limits = options.limits ?? [];
  if (limits.length > 0 && options.table.limitTable === undefined) {
    throw new ConfigError('limits', `Table ${options.table.schema}.${options.table.table} has no limit table: its rows cannot run under limits`);
  }
  return Object.freeze([...limits]);
}

function checkLogger(logger: WorkerLogger | null | undefined): WorkerLogger | null {
  if (logger === undefined) return console;
  if (logger !== null && (typeof logger?.warn !== 'function' || typeof logger.error !== 'function')) {
    throw new ConfigError('logger', 'Expected `logger` to have `warn` and `error` methods (pino, bunyan, console), or to be null');
  }
  return logger;
}
