import { getTask } from '@leasehold/core';
import { errorCode } from '@leasehold/core/internal';
import type { RouteDeps } from '../env.js';
import { taskEventsList } from '../sql/task-events-list.js';
import { taskGrandchildren } from '../sql/task-grandchildren.js';
import { CHILDREN_SHOWN, GRANDCHILDREN_SHOWN, type RunView } from './run-view.js';

/**
 * Reads what a task's page shows of its run: core's `getTask` (steps, signals, children,
 * timeline), its progress events (values through `redact`, as payloads are) and its children's
 * children. Null when the task is gone, or the schema predates workflows (core migrations 8 and
 * 17). `id` must be a checked row id; `now` is the database's.
 */
export async function readRun(deps: RouteDeps, id: string, name: string, now: Date, path: string): Promise<RunView | null> {
  const db = deps.settings.database;
  const table = deps.tables.task;
  const [info, raw] = await Promise.all([getTask(db, id, { schema: deps.settings.schema }).catch(beforeWorkflows), taskEventsList(db, table, id)]);
  if (info === null) return null;
  const grandchildren = await taskGrandchildren(db, table, info.children.slice(0, CHILDREN_SHOWN).map((c) => c.id), GRANDCHILDREN_SHOWN);
  const events = raw?.map((e) => ({ ...e, value: deps.settings.redact(e.value, { table: 'task', field: 'event', id, name }) })) ?? null;
  return { info, events, grandchildren, now, path };
}

// a schema migrated before workflows (no step table) or before forks (no forked_from column) has
// no run to show: the task's page still shows the row, as it did before the run page
function beforeWorkflows(error: unknown): null {
  const code = errorCode(error);
  if (code === '42P01' || code === '42703') return null;
  throw error;
}
