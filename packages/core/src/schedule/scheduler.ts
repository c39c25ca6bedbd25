import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'eventemitter3';
import { sql } from 'kysely';
import { parseDuration, type Duration } from '../duration.js';
import { toError, WorkerStateError } from '../errors.js';
import { validateIdentifier } from '../input/identifier.js';
import { checkName } from '../input/text.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { ConfigError } from '../leasehold-error.js';
import { taskTable } from '../leased-table.js';
import { execute, noPreparedStatements } from '../sql/execute.js';
import { scheduleAdvance } from '../sql/schedule-advance.js';
import { scheduleLock } from '../sql/schedule-lock.js';
import { scheduleRegisterMany, type ScheduleDeclaration } from '../sql/schedule-register-many.js';
import { scheduleTouchMany } from '../sql/schedule-touch-many.js';
import { taskInsertMany, type TaskInsert } from '../sql/task-insert-many.js';
import { inTransaction, type PgPoolLike } from '../sql/transaction.js';
import { prepareInserts } from '../task/enqueue.js';
import { WorkerLog, type WorkerLogger } from '../worker/worker-log.js';
import type { ScheduleDefinition } from './define-schedule.js';
import type { SchedulerEventMap } from './scheduler-events.js';
import { ticksToFire } from './ticks-to-fire.js';

/** Options of {@link createScheduler}. */
export interface SchedulerOptions {
  /** A `pg` pool; a tick is one short transaction on it. */
  pool: PgPoolLike;
  /** The schedules this process runs; each must have a unique name. */
  schedules: readonly ScheduleDefinition<unknown>[];
  /** Schema holding the `schedule` and `task` tables. @defaultValue 'leasehold' */
  schema?: string;
  /** Recorded as who last ran each schedule (`seen_by`). @defaultValue `<hostname>:<pid>:<random>` */
  owner?: string;
  /** Where errors are logged (once per outage, see the worker's logger). @defaultValue console */
  logger?: WorkerLogger | null;
  /**
   * The pool reaches PostgreSQL through a pooler in transaction mode: send no named prepared
   * statements through it (this calls `noPreparedStatements()` on the pool). The scheduler holds
   * no session state: each tick is one transaction. @defaultValue false
   */
  noPreparedStatements?: boolean;
}

// how long a firer waits for another firer's lock on the schedule's row before trying again
const LOCK_TIMEOUT = '5s';
// a tick is tried this long after it is due by the database's clock, so it is due when it arrives
const AFTER_TICK_MS = 5;
const MAX_RETRY_MS = 30_000;
const MAX_TIMER_MS = 2_147_483_647;
/**
 * A running scheduler marks its schedules seen this often; one seen within {@link ALIVE_MS} is
 * alive, and a scheduler starting beside it leaves the due ticks to it.
 */
const HEARTBEAT_MS = 10_000;
const ALIVE_MS = 3 * HEARTBEAT_MS;

/**
 * Fires schedules: at each tick, one short transaction locks the schedule's row, enqueues the
 * tick's task and records the tick, so however many processes run the same schedule, each tick
 * enqueues exactly one task. Ticks are due by the database's clock. At start it records its
 * schedules and fires what came due while none ran, by each schedule's `catchUp` policy.
 * `createWorker({ schedules })` runs one; use this for a process that only schedules.
 *
 * @example
 * const scheduler = createScheduler({ pool, schedules: [nightly] });
 * await scheduler.start();
 * process.once('SIGTERM', () => void scheduler.stop());
 */
export class Scheduler extends EventEmitter<SchedulerEventMap> {
  readonly owner: string;
  readonly #pool: PgPoolLike;
  readonly #schema: string;
  readonly #schedules: readonly ScheduleDefinition<unknown>[];
  readonly #log: WorkerLog;
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #failures = new Map<string, number>();
  readonly #firing = new Set<Promise<void>>();
  #heartbeat: NodeJS.Timeout | undefined;
  /** The database's clock minus this process's, as last measured. */
  #clockOffsetMs = 0;
  #state: 'new' | 'running' | 'stopped' = 'new';

  constructor(options: SchedulerOptions) {
    super();
    if (typeof options?.pool?.connect !== 'function') throw new ConfigError('pool', 'Expected `pool` to be a pg Pool');
    checkOptionKeys(options, SCHEDULER_OPTIONS);
    if (!Array.isArray(options.schedules)) throw new ConfigError('schedules', 'Expected `schedules` to be an array made by defineSchedule()');
    const names = new Set<string>();
    for (const s of options.schedules) {
      if (typeof s?.payloadFor !== 'function') throw new ConfigError('schedules', 'Expected every entry of `schedules` to be made by defineSchedule()');
      if (names.has(s.name)) throw new ConfigError('schedules', `Schedule "${s.name}" is listed twice`);
      names.add(s.name);
    }
    if (options.noPreparedStatements !== undefined && typeof options.noPreparedStatements !== 'boolean') {
      throw new ConfigError('noPreparedStatements', 'Expected `noPreparedStatements` to be true or false');
    }
    if (options.noPreparedStatements === true) noPreparedStatements(options.pool);
    this.#pool = options.pool;
    this.#schema = validateIdentifier(options.schema ?? 'leasehold', 'schema');
    this.#schedules = [...options.schedules];
    this.owner = checkName(options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`, 'owner');
    this.#log = new WorkerLog(options.logger === undefined ? console : options.logger, this.owner);
  }

  /**
   * Records the schedules; for each one no other scheduler is seen running, handles the ticks
   * missed meanwhile (its `catchUp` policy); then plans each one's next tick. A scheduler starts
   * once: `start()` again, running or stopped, rejects with a `WorkerStateError`.
   */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new WorkerStateError('scheduler', this.owner, this.#state);
    this.#state = 'running';
    await scheduleRegisterMany(this.#pool, this.#schema, this.owner, this.#schedules.map(declaration));
    for (const schedule of this.#schedules) {
      const dbNow = await this.#fireDue(schedule, 'backlog');
      this.#planNext(schedule, dbNow);
    }
    const names = this.#schedules.map((s) => s.name);
    if (this.#state !== 'running') return; // stopped while starting
    this.#heartbeat = setInterval(() => {
      scheduleTouchMany(this.#pool, this.#schema, this.owner, names, ALIVE_MS).catch((error: unknown) => this.#reportError(null, toError(error), 'heartbeat'));
    }, HEARTBEAT_MS);
  }

  /**
   * Stops planning ticks, waits (at most `timeout`) for a tick being fired, and says it is no
   * longer alive, so a scheduler started next handles what comes due meanwhile by the catch-up
   * policy at once. Idempotent; safe before `start()`.
   */
  async stop(options: { timeout?: Duration } = {}): Promise<void> {
    const timeoutMs = parseDuration(options.timeout ?? '5s', 'timeout', { allowZero: true });
    const wasRunning = this.#state === 'running';
    this.#state = 'stopped';
    clearInterval(this.#heartbeat);
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    const goodbye = wasRunning
      ? scheduleTouchMany(this.#pool, this.#schema, this.owner, this.#schedules.map((s) => s.name), 0).catch(() => undefined)
      : Promise.resolve();
    await Promise.race([Promise.allSettled([...this.#firing]).then(() => goodbye), deadline]);
    clearTimeout(timer);
  }

  #plan(schedule: ScheduleDefinition<unknown>, delayMs: number): void {
    if (this.#state !== 'running') return;
    const timer = setTimeout(() => {
      this.#timers.delete(schedule.name);
      const firing = this.#fire(schedule);
      this.#firing.add(firing);
      void firing.finally(() => this.#firing.delete(firing));
    }, Math.min(Math.max(0, delayMs), MAX_TIMER_MS));
    this.#timers.set(schedule.name, timer);
  }

  #planNext(schedule: ScheduleDefinition<unknown>, dbNow: number | null): void {
    if (dbNow === null) return; // failed: a retry is planned already
    const next = schedule.rule.next(new Date(dbNow));
    if (next !== null) this.#plan(schedule, next.getTime() - this.#dbNow() + AFTER_TICK_MS);
  }

  #reportError(name: string | null, error: Error, doing: string): void {
    if (!this.#log.unreachable(error, `the scheduler retries with backoff`)) {
      this.#log.write('error', `scheduler: ${doing}: ${error.message}`, { schedule: name, err: error });
    }
    this.emit('scheduler:error', { name, error });
  }

  async #fire(schedule: ScheduleDefinition<unknown>): Promise<void> {
    this.#planNext(schedule, await this.#fireDue(schedule, 'current'));
  }

  /**
   * Fires the due ticks of one schedule, or on failure plans a retry with backoff and returns
   * null; returns the database's now.
   */
  async #fireDue(schedule: ScheduleDefinition<unknown>, mode: 'current' | 'backlog'): Promise<number | null> {
    try {
      const dbNow = await this.#fireTransaction(schedule, mode);
      this.#failures.delete(schedule.name);
      this.#log.reachable();
      return dbNow;
    } catch (error) {
      const failures = (this.#failures.get(schedule.name) ?? 0) + 1;
      this.#failures.set(schedule.name, failures);
      this.#reportError(schedule.name, toError(error), `schedule ${schedule.name}`);
      // the retry is a running scheduler's: whatever came due meanwhile counts from its latest tick
      this.#plan(schedule, Math.min(MAX_RETRY_MS, 500 * 2 ** failures));
      return null;
    }
  }

  /** One transaction: lock the row, enqueue the due ticks' tasks, record the latest. Returns the database's now. */
  async #fireTransaction(schedule: ScheduleDefinition<unknown>, mode: 'current' | 'backlog'): Promise<number> {
    const table = taskTable(this.#schema);
    const { plan, paused, ids, now } = await inTransaction(this.#pool, async (trx) => {
      await execute(trx, sql.raw(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`));
      let state = await scheduleLock(trx, this.#schema, schedule.name);
      if (state === null) {
        // removed by hand while this process runs it: declare it again
        await scheduleRegisterMany(trx, this.#schema, this.owner, [declaration(schedule)]);
        state = (await scheduleLock(trx, this.#schema, schedule.name))!;
      }
      this.#clockOffsetMs = state.now.getTime() - Date.now();
      // another scheduler alive handles what is due; this one only plans its timers
      if (mode === 'backlog' && state.alive && state.seenBy !== this.owner) return { plan: { fire: [], skipped: 0, advanceTo: null }, paused: state.paused, ids: [], now: state.now.getTime() };
      const plan = ticksToFire(schedule.rule, state, schedule.catchUp, mode);
      const rows: TaskInsert[] = [];
      const fired: Date[] = [];
      for (const tick of plan.fire) {
        try {
          rows.push(...prepareInserts(schedule.task, [{ payload: schedule.payloadFor(tick), dedupKey: `${schedule.name}@${tick.toISOString()}` }]));
          fired.push(tick);
        } catch (error) {
          // a payload the task refuses would fail every retry: this tick is skipped, loudly
          const e = toError(error);
          this.#log.write('error', `schedule ${schedule.name}: tick ${tick.toISOString()} skipped: ${e.message}`, { schedule: schedule.name, err: e });
          this.emit('scheduler:error', { name: schedule.name, error: e });
        }
      }
      const inserted = await taskInsertMany(trx, table, rows);
      await scheduleAdvance(trx, this.#schema, schedule.name, plan.advanceTo, this.owner, ALIVE_MS);
      return { plan: { ...plan, fire: fired }, paused: state.paused, ids: inserted.map((r) => r.id), now: state.now.getTime() };
    }, 'a tick locks its schedule until its task is enqueued');
    if (plan.skipped > 0) this.emit('schedule:skipped', { name: schedule.name, ticks: plan.skipped, paused });
    plan.fire.forEach((tick, i) => this.emit('schedule:fired', { name: schedule.name, tick, taskId: ids[i]! }));
    return now;
  }

  #dbNow(): number {
    return Date.now() + this.#clockOffsetMs;
  }
}

function declaration(schedule: ScheduleDefinition<unknown>): ScheduleDeclaration {
  const { name, task, rule, catchUp } = schedule;
  return { name, taskName: task.name, cron: rule.expression, timezone: rule.timezone, catchUp };
}

const SCHEDULER_OPTIONS = optionKeys<SchedulerOptions>()('createScheduler', ['pool', 'schedules', 'schema', 'owner', 'logger', 'noPreparedStatements']);

/** Creates a {@link Scheduler}; options are checked here, before anything touches the database. */
export function createScheduler(options: SchedulerOptions): Scheduler {
  return new Scheduler(options);
}
