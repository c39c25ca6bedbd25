import type { ScheduleDefinition } from '../schedule/define-schedule.js';
import type { TaskDefinition } from './define-task.js';

// Checked by shape, never by `instanceof` or a private symbol: a definition made by another copy
// of @leasehold/core (an application's own, beside the CLI's) must still be recognised.

/**
 * Whether `value` is what `defineTask` returns: for code that collects task definitions
 * from modules it did not write, such as `leasehold worker --tasks`.
 *
 * @example
 * const tasks = Object.values(await import('./tasks.js')).filter(isTaskDefinition);
 */
export function isTaskDefinition(value: unknown): value is TaskDefinition<unknown, unknown> {
  if (typeof value !== 'object' || value === null || !Object.isFrozen(value)) return false;
  const v = value as Partial<Record<keyof TaskDefinition<unknown>, unknown>>;
  return (
    typeof v.name === 'string' &&
    typeof v.handler === 'function' &&
    typeof v.maxAttempts === 'number' &&
    typeof v.ordered === 'boolean' &&
    typeof v.settings === 'object' &&
    v.settings !== null &&
    Array.isArray(v.runsVersions)
  );
}

/**
 * Whether `value` is what `defineSchedule` returns (its task included).
 *
 * @example
 * const schedules = Object.values(await import('./tasks.js')).filter(isScheduleDefinition);
 */
export function isScheduleDefinition(value: unknown): value is ScheduleDefinition<unknown> {
  if (typeof value !== 'object' || value === null || !Object.isFrozen(value)) return false;
  const v = value as Partial<Record<keyof ScheduleDefinition<unknown>, unknown>>;
  return (
    typeof v.name === 'string' &&
    typeof v.payloadFor === 'function' &&
    typeof v.catchUp === 'number' &&
    typeof v.rule === 'object' &&
    v.rule !== null &&
    isTaskDefinition(v.task)
  );
}
