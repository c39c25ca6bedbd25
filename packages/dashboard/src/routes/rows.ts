import type { Context } from 'hono';
import type { DashboardApp, DashboardEnv, RouteDeps } from '../env.js';
import { one, parseKey, parseRowId } from '../input.js';
import type { RedactContext, TableKind } from '../options.js';
import { leasedGroupRows } from '../sql/leased-group-rows.js';
import { leasedGroupState } from '../sql/leased-group-state.js';
import { leasedRowGet } from '../sql/leased-row-get.js';
import { readRun } from '../run/read-run.js';
import { groupPage } from '../views/group-page.js';
import { messagePage } from '../views/layout.js';
import { rowPage } from '../views/row-page.js';

/** GET /tasks/:id, /outbox/:id (one row) and /tasks/group, /outbox/group (one ordering group). */
export function rowRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.get('/tasks/group', (c) => group(c, deps, 'task'));
  app.get('/outbox/group', (c) => group(c, deps, 'outbox'));
  app.get('/tasks/:id{[0-9]+}', (c) => row(c, deps, 'task'));
  app.get('/outbox/:id{[0-9]+}', (c) => row(c, deps, 'outbox'));
}

const PATHS: Readonly<Record<TableKind, string>> = { task: '/tasks', outbox: '/outbox' };

async function row(c: Context<DashboardEnv>, deps: RouteDeps, kind: TableKind): Promise<Response> {
  const page = c.get('page');
  if (!page.tables[kind]) return c.notFound();
  const id = parseRowId(c.req.param('id') ?? '', 'id');
  const db = deps.settings.database;
  const raw = await leasedRowGet(db, deps.tables[kind], id);
  const path = `${page.base}${PATHS[kind]}`;
  if (raw === null) return c.html(messagePage(page, 'Not found', `There is no row #${id} (it may have been purged).`, { href: path, label: 'Back to the list' }), 404);
  const group = typeof raw.group_key === 'string' ? await leasedGroupState(db, deps.tables[kind], raw.group_key) : null;
  const name = String(raw[deps.tables[kind].nameColumn]);
  const redact = (field: RedactContext['field'], value: unknown) => deps.settings.redact(value, { table: kind, field, id, name });
  const shown = kind === 'task'
    ? { payload: redact('payload', raw.payload), checkpoint: raw.checkpoint == null ? null : redact('checkpoint', raw.checkpoint) }
    : { payload: redact('payload', raw.payload), headers: redact('headers', raw.headers) };
  const run = kind === 'task' ? await readRun(deps, id, name, raw.db_now as Date, path) : null;
  return c.html(rowPage(page, { kind, raw, shown, group, path, run }));
}

async function group(c: Context<DashboardEnv>, deps: RouteDeps, kind: TableKind): Promise<Response> {
  const page = c.get('page');
  if (!page.tables[kind]) return c.notFound();
  const key = parseKey(one(c.req.query('key')), 'key');
  if (key === null) return c.redirect(`${page.base}${PATHS[kind]}`, 303);
  const db = deps.settings.database;
  const [state, rows] = await Promise.all([
    leasedGroupState(db, deps.tables[kind], key),
    leasedGroupRows(db, deps.tables[kind], key, deps.settings.pageSize),
  ]);
  return c.html(groupPage(page, { kind, key, state, rows }));
}
