import { getTask } from '@leasehold/core';
import type { RouteDeps } from '../env.js';
import { taskEventsList } from '../sql/task-events-list.js';
import { taskGrandchildren } from '../sql/task-grandchildren.js';
import { CHILDREN_SHOWN, GRANDCHILDREN_SHOWN, type RunView } from './run-view.js';

/**
 * Reads what a task's page shows of its run: core's `getTask` (steps, signals, children,
 * timeline), its progress events (values through `redact`, as payloads are) and its children's
 * children. Null when the task is gone. `id` must be a checked row id; `now` is the database's.
 */
export async function readRun(deps: RouteDeps, id: string, name: string, now: Date, path: string): Promise<RunView | null> {
  const db = deps.settings.database;
  const table = deps.tables.task;
  const [info, raw] = await Promise.all([getTask(db, id, { schema: deps.settings.schema }), taskEventsList(db, table, id)]);
  if (info === null) return null;
  const grandchildren = await taskGrandchildren(db, table, info.children.slice(0, CHILDREN_SHOWN).map((c) => c.id), GRANDCHILDREN_SHOWN);
  const events = raw?.map((e) => ({ ...e, value: deps.settings.redact(e.value, { table: 'task', field: 'event', id, name }) })) ?? null;
  return { info, events, grandchildren, now, path };
}
