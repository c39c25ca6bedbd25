import { checkInteger } from '../input/integer.js';
import { checkName } from '../input/text.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { ConfigError } from '../leasehold-error.js';
import { prepareInserts } from '../task/enqueue.js';
import type { TaskDefinition } from '../task/define-task.js';
import { CronRule } from './cron-rule.js';

/** Options of {@link defineSchedule}. */
export interface ScheduleOptions<P> {
  /**
   * When it fires: a cron expression of 5 fields (minute, hour, day of month, month, day of
   * week) or 6 (seconds first), e.g. `'0 3 * * *'` (03:00 every day), `'0,30 * * * * *'`
   * (twice a minute). Parsed by croner: ranges, steps, lists, names (`MON`, `JAN`).
   */
  cron: string;
  /** IANA time zone the cron expression is read in; daylight-saving time follows it. @defaultValue 'UTC' */
  timezone?: string;
  /**
   * The payload of each tick's task: a value, or a function of the tick (the time it was due).
   * Checked by the task's validator when it fires.
   */
  payload: P | ((tick: Date) => P);
  /**
   * How many missed ticks to enqueue after downtime — ticks that came due while no worker ran
   * the schedule, or while the database was out of reach: the most recent ones, oldest first;
   * older ones are skipped. 0 skips every missed tick. Ticks while paused are always skipped.
   * @defaultValue 0
   */
  catchUp?: number;
}

/** A checked schedule: what `createScheduler` and `createWorker({ schedules })` take. */
export interface ScheduleDefinition<P = unknown> {
  /** Unique name: the schedule's row in the `schedule` table. */
  readonly name: string;
  /** The task each tick enqueues. */
  readonly task: TaskDefinition<P>;
  readonly rule: CronRule;
  readonly catchUp: number;
  /** The payload for a tick, from the value or the function given. */
  payloadFor(tick: Date): P;
}

/** Most missed ticks one catch-up may enqueue: a catch-up is one transaction. */
export const MAX_CATCH_UP = 1_000;

const SCHEDULE_OPTIONS = optionKeys<ScheduleOptions<unknown>>()('defineSchedule', ['cron', 'timezone', 'payload', 'catchUp'], {
  tz: 'the time zone is `timezone`',
  schedule: 'the cron expression is `cron`',
});

/**
 * Declares a recurring task. Each tick enqueues exactly one task however many worker processes
 * run the schedule: the tick is fired through the schedule's row in the database, never by a
 * leader elected in memory. Checked here: an invalid cron expression, an unknown time zone or a
 * bad `catchUp` is a `ConfigError` naming the option.
 *
 * @example
 * const nightly = defineSchedule('nightly-report', sendReport, {
 *   cron: '0 3 * * *', timezone: 'Europe/Berlin', payload: (tick) => ({ day: tick.toISOString().slice(0, 10) }),
 * });
 * createWorker({ pool, tasks: [sendReport], schedules: [nightly] });
 */
export function defineSchedule<P>(name: string, task: TaskDefinition<P>, options: ScheduleOptions<P>): ScheduleDefinition<P> {
  checkName(name, 'name', 'the schedule name');
  if (typeof task?.name !== 'string' || typeof task.handler !== 'function') {
    throw new ConfigError('task', `Expected the task of schedule "${name}" to be made by defineTask()`);
  }
  if (task.ordered) throw new ConfigError('task', `Schedule "${name}": an ordered task needs a group key per tick, which schedules do not give`);
  checkOptionKeys(options, SCHEDULE_OPTIONS, '', `defineSchedule "${name}"`);
  const rule = new CronRule(options?.cron, options.timezone ?? 'UTC');
  const catchUp = checkInteger(options.catchUp ?? 0, 'catchUp', { min: 0, max: MAX_CATCH_UP });
  if (!('payload' in options)) throw new ConfigError('payload', `Expected schedule "${name}" to give a \`payload\` (a value, or a function of the tick)`);
  const payload = options.payload;
  const payloadFor = (tick: Date): P => (typeof payload === 'function' ? (payload as (tick: Date) => P)(tick) : payload);
  // a fixed payload is checked now, so a bad one fails here rather than at every tick
  if (typeof payload !== 'function') prepareInserts(task, [{ payload }]);
  return Object.freeze({ name, task, rule, catchUp, payloadFor });
}
