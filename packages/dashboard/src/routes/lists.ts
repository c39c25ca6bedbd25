import type { Context } from 'hono';
import type { DashboardApp, DashboardEnv, RouteDeps } from '../env.js';
import { badRequest, one, parseKey, parseName, parseRowId, parseStatus, parseTime } from '../input.js';
import type { TableKind } from '../options.js';
import { leasedDeadHeads } from '../sql/leased-dead-heads.js';
import { leasedIdAt } from '../sql/leased-id-at.js';
import { leasedIdBounds } from '../sql/leased-id-bounds.js';
import { leasedListPage, type ListPage } from '../sql/leased-list-page.js';
import { taskChildrenPage } from '../sql/task-children-page.js';
import { blockedAggregates } from '../views/blocked.js';
import { listPage, type ListQuery } from '../views/list.js';

/** GET /tasks and GET /outbox: filtered, keyset-paged lists, newest first. */
export function listRoutes(app: DashboardApp, deps: RouteDeps): void {
  app.get('/tasks', (c) => list(c, deps, 'task'));
  app.get('/outbox', (c) => list(c, deps, 'outbox'));
}

async function list(c: Context<DashboardEnv>, deps: RouteDeps, kind: TableKind): Promise<Response> {
  const page = c.get('page');
  if (!page.tables[kind]) return c.notFound();
  const q = c.req.query();
  const query: ListQuery = { status: one(q.status), name: one(q.name), group: one(q.group), from: one(q.from), to: one(q.to), parent: kind === 'task' ? one(q.parent) : '' };
  const below = one(q.below) === '' ? null : parseRowId(one(q.below), 'below');
  const rows = await readPage(deps, kind, query, below);
  const extra = kind === 'outbox' && below === null
    ? blockedAggregates(page, await leasedDeadHeads(deps.settings.database, deps.tables.outbox, '0', 20))
    : undefined;
  return c.html(listPage(page, { kind, query, page: rows, first: below === null, extra }));
}

async function readPage(deps: RouteDeps, kind: TableKind, query: ListQuery, below: string | null): Promise<ListPage | null> {
  const filter = { status: parseStatus(query.status), name: parseName(query.name, 'name'), groupKey: parseKey(query.group, 'group') };
  const parent = query.parent === '' ? null : parseRowId(query.parent, 'parent');
  if (parent !== null && filter.groupKey !== null) throw badRequest('Filter by a parent or by a group key, not both');
  const from = parseTime(query.from, 'from');
  const to = parseTime(query.to, 'to');
  const db = deps.settings.database;
  const table = deps.tables[kind];
  const bounds = await leasedIdBounds(db, table);
  if (bounds === null) return null;
  // time bounds become id bounds (ids grow with created_at): one index range however old
  const floor = from === null ? BigInt(bounds.min) : max(BigInt(bounds.min), BigInt(await leasedIdAt(db, table, from)));
  const top = to === null ? BigInt(bounds.max) + 1n : BigInt(await leasedIdAt(db, table, to));
  const start = below === null ? top : min(BigInt(below), top);
  if (start <= floor) return { rows: [], next: null, scannedFrom: String(floor) };
  const range = { below: String(start), floor: String(floor), limit: deps.settings.pageSize };
  // a run's children are one range of their own index: no scan window needed
  return parent === null ? leasedListPage(db, table, filter, range) : taskChildrenPage(db, table, parent, filter, range);
}

const max = (a: bigint, b: bigint) => (a > b ? a : b);
const min = (a: bigint, b: bigint) => (a < b ? a : b);
