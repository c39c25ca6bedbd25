import { taskTable } from '../leased-table.js';
import { ConfigError } from '../leasehold-error.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { checkName } from '../input/text.js';
import type { Executor } from '../sql/execute.js';
import { taskIdAt, taskListPage, type TaskSummary } from '../sql/task-list.js';
import { TASK_STATUSES, type TaskStatus } from '../task-status.js';
import { taskId } from './send-signal.js';
import type { TaskRef } from './task-ref.js';

/** Which tasks {@link listTasks} lists; every field narrows, an absent one means "any". */
export interface TaskListFilter {
  /** A task name, or several (at most 100): tasks with any of them. */
  readonly name?: string | readonly string[];
  /** A status, or several: tasks in any of them. */
  readonly status?: TaskStatus | readonly TaskStatus[];
  /** The children of this task (`ctx.spawn`): its id or its handle. */
  readonly parent?: string | TaskRef<unknown>;
  /** Created at or after this time. */
  readonly createdAfter?: Date;
  /** Created before this time. */
  readonly createdBefore?: Date;
}

/** Which page {@link listTasks} reads, and where. */
export interface TaskListOptions {
  /** Tasks per page, 1 to 1,000; 50 by default. */
  readonly limit?: number;
  /** The previous page's `next`; absent or null for the first (newest) page. */
  readonly after?: string | null;
  /** The schema of the task table; `leasehold` by default. */
  readonly schema?: string;
}

/** One page of {@link listTasks}. */
export interface TaskList {
  /** Newest first (by id, which grows with creation). */
  readonly tasks: readonly TaskSummary[];
  /** Pass as `after` for the next (older) page; null when this page is the last. An opaque string. */
  readonly next: string | null;
}

const FILTER_KEYS = optionKeys<TaskListFilter>()('listTasks filter', ['name', 'status', 'parent', 'createdAfter', 'createdBefore']);
const LIST_OPTIONS = optionKeys<TaskListOptions>()('listTasks', ['limit', 'after', 'schema']);
const MAX_NAMES = 100;
const CURSOR = /^t([1-9][0-9]{0,18})$/;

/**
 * Lists tasks, newest first, a page at a time: by name, status, parent and creation time, each
 * page bounded index ranges (keyset paging on the id, never OFFSET), so a page costs about the
 * same on a table of a million runs as on an empty one (about 1 ms). Running tasks are read from
 * the leases' index (core migration 16's index leaves them out, so claims do not write to it):
 * a filter by name, or one that includes `processing`, also reads every task in flight, about
 * 1 ms per 1,000. Walking the pages with `next` visits every
 * task that existed when the walk began exactly once, whatever is enqueued meanwhile (new tasks
 * have higher ids and appear on a new walk); a task whose status changes during the walk may
 * leave or enter a status filter's later pages. Time bounds are looked up as id bounds (ids grow
 * with `created_at`) and checked exactly on each row, so a row whose inserting transaction ran
 * across a bound may be left out. Needs core migration 16 (its index). Takes no locks.
 *
 * Throws a `ConfigError` for an unknown filter or option key, a bad status, name, id, date,
 * limit or cursor.
 *
 * @example
 * let page = await listTasks(pool, { name: 'send-email', status: ['dead', 'waiting'] }, { limit: 100 });
 * for (;;) {
 *   for (const task of page.tasks) console.log(task.id, task.status, task.createdAt);
 *   if (page.next === null) break;
 *   page = await listTasks(pool, { name: 'send-email', status: ['dead', 'waiting'] }, { limit: 100, after: page.next });
 * }
 */
export async function listTasks(executor: Executor, filter: TaskListFilter = {}, options: TaskListOptions = {}): Promise<TaskList> {
  checkOptionKeys(filter, FILTER_KEYS);
  checkOptionKeys(options, LIST_OPTIONS);
  const names = listOf(filter.name, 'name').map((n) => checkName(n, 'name'));
  if (names.length > MAX_NAMES) throw new ConfigError('name', `Expected at most ${MAX_NAMES} names, got ${names.length}`);
  const statuses = listOf(filter.status, 'status').map(checkStatus);
  const parentId = filter.parent === undefined ? null : parentOf(filter.parent);
  const createdAfter = dateOf(filter.createdAfter, 'createdAfter');
  const createdBefore = dateOf(filter.createdBefore, 'createdBefore');
  const limit = limitOf(options.limit);
  const below = cursorOf(options.after);
  const table = taskTable(options.schema);
  const empty: TaskList = { tasks: [], next: null };
  if (createdAfter !== null && createdBefore !== null && createdAfter >= createdBefore) return empty;
  const floor = createdAfter === null ? null : await taskIdAt(executor, table, createdAfter);
  const top = createdBefore === null ? null : await taskIdAt(executor, table, createdBefore);
  if ((createdAfter !== null && floor === null) || (createdBefore !== null && top === null)) return empty; // no rows at all
  const upper = top === null ? below : below === null ? top : (BigInt(below) < BigInt(top) ? below : top);
  if (upper !== null && floor !== null && BigInt(upper) <= BigInt(floor)) return empty;
  const rows = await taskListPage(executor, table, {
    names: names.length === 0 ? null : [...new Set(names)],
    statuses: statuses.length === 0 ? null : [...new Set(statuses)],
    parentId,
    createdAfter,
    createdBefore,
    below: upper,
    floor,
    limit,
  });
  const tasks = rows.slice(0, limit);
  return { tasks, next: rows.length > limit ? `t${tasks.at(-1)!.id}` : null };
}

function listOf<T>(value: T | readonly T[] | undefined, option: string): T[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) return [value as T];
  if (value.length === 0) throw new ConfigError(option, 'Expected at least one value, or no filter');
  return [...(value as readonly T[])];
}

function checkStatus(value: unknown): TaskStatus {
  if (typeof value !== 'string' || !(TASK_STATUSES as readonly string[]).includes(value)) {
    throw new ConfigError('status', `Expected one of ${TASK_STATUSES.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as TaskStatus;
}

function parentOf(parent: string | TaskRef<unknown>): string {
  try {
    return taskId(parent);
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError('parent', 'Expected a task id (a positive integer, as a string) or a task handle');
    throw error;
  }
}

function dateOf(value: unknown, option: string): Date | null {
  if (value === undefined) return null;
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new ConfigError(option, 'Expected a valid Date');
  return value;
}

function limitOf(value: unknown): number {
  if (value === undefined) return 50;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1000) {
    throw new ConfigError('limit', `Expected an integer from 1 to 1000, got ${String(value)}`);
  }
  return value;
}

function cursorOf(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const match = typeof value === 'string' ? CURSOR.exec(value) : null;
  if (match === null || BigInt(match[1]!) > 9_223_372_036_854_775_807n) {
    throw new ConfigError('after', "Expected the `next` of a previous listTasks page");
  }
  return match[1]!;
}
