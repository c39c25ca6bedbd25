import { TASK_STATUSES, type TaskStatus } from '@leasehold/core';
import { checkName } from '@leasehold/core/internal';
import { UsageError } from './errors.js';
import { checked, durationOf } from './option-values.js';

/** What `leasehold tasks list` was told on its command line: core's `listTasks` filter and page. */
export interface TasksListArgs {
  /** `--name a,b`: any of these task names; empty: any. */
  readonly names: readonly string[];
  /** `--status dead,waiting`: any of these statuses; empty: any. */
  readonly statuses: readonly TaskStatus[];
  /** `--parent 12` (or `task:12`): the children of this task. */
  readonly parent: string | undefined;
  /** `--created-after`: an ISO 8601 time, or a duration meaning that long ago (`2h`). */
  readonly createdAfter: Date | undefined;
  /** `--created-before`: the same. */
  readonly createdBefore: Date | undefined;
  /** `--limit`: tasks per page, 1 to 1000. @defaultValue 50 */
  readonly limit: number;
  /** `--after`: the cursor a previous page printed. */
  readonly after: string | undefined;
}

interface Values {
  name?: string;
  status?: string;
  parent?: string;
  'created-after'?: string;
  'created-before'?: string;
  limit?: string;
  after?: string;
}

/** Checks `tasks list`'s options; a mistake is a {@link UsageError} (exit code 2). `now` is for times given as durations. */
export function tasksListArgsOf(values: Values, now = Date.now()): TasksListArgs {
  const statuses = listOf(values.status).map((s) => {
    if (!(TASK_STATUSES as readonly string[]).includes(s)) throw new UsageError(`--status must be among ${TASK_STATUSES.join(', ')}, got "${s}"`);
    return s as TaskStatus;
  });
  const parent = values.parent?.replace(/^task:/, '');
  if (parent !== undefined && !/^[1-9][0-9]{0,18}$/.test(parent)) throw new UsageError(`--parent must be a task id such as 12 or task:12, got "${values.parent}"`);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (values.limit !== undefined && (!/^\d+$/.test(values.limit) || limit < 1 || limit > 1000)) {
    throw new UsageError(`--limit must be a whole number from 1 to 1000, got "${values.limit}"`);
  }
  return {
    names: listOf(values.name).map((n) => checked(() => checkName(n, '--name'), '--name')),
    statuses,
    parent,
    createdAfter: timeOf(values['created-after'], '--created-after', now),
    createdBefore: timeOf(values['created-before'], '--created-before', now),
    limit,
    after: values.after,
  };
}

function listOf(value: string | undefined): string[] {
  if (value === undefined) return [];
  const items = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (items.length === 0) throw new UsageError('an empty list: give a value, or leave the option out');
  return items;
}

function timeOf(value: string | undefined, option: string, now: number): Date | undefined {
  if (value === undefined) return undefined;
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) {
    const at = new Date(value);
    if (Number.isNaN(at.getTime())) throw new UsageError(`${option} must be an ISO 8601 time (2026-03-01T10:00:00Z) or a duration ago (2h), got "${value}"`);
    return at;
  }
  return new Date(now - durationOf(value, option, false, '30m, 2h, 7d, or an ISO 8601 time'));
}
